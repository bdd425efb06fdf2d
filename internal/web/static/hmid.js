// hmid pages: progressive enhancements only. Every page works without this
// script; it adds copy buttons and confirmations where they help.
(function () {
  "use strict";

  // <button data-copy="#id"> copies the text of the element #id.
  document.querySelectorAll("[data-copy]").forEach(function (btn) {
    btn.hidden = false;
    btn.addEventListener("click", function () {
      var src = document.querySelector(btn.getAttribute("data-copy"));
      if (!src || !navigator.clipboard) { return; }
      navigator.clipboard.writeText(src.textContent.trim()).then(function () {
        var label = btn.textContent;
        btn.textContent = btn.getAttribute("data-copied") || "Copied";
        setTimeout(function () { btn.textContent = label; }, 2000);
      });
    });
  });

  // An element with data-location="/path" is on a page answering a form
  // post that showed a secret once: the address becomes that page's own, so
  // reloading loads the page (without the secret) instead of posting again.
  var here = document.querySelector("[data-location]");
  if (here && window.history && history.replaceState) {
    history.replaceState(null, "", here.getAttribute("data-location"));
  }

  // <form data-confirm="Really?"> asks before it is sent. Without script the
  // form's own confirmation field (a checkbox or a typed word) still guards it.
  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      if (!window.confirm(form.getAttribute("data-confirm"))) { ev.preventDefault(); }
    });
  });
  // <input data-strength="#id"> shows a strength hint in the element #id
  // while a new password is typed: a rough estimate from its length and the
  // kinds of characters in it (lower case, upper case, digits, others), the
  // texts given by the page in the element's data-short, -weak, -fair and
  // -strong. It only guides: the server decides (minimum length, the list
  // of common passwords) when the form is sent.
  document.querySelectorAll("input[data-strength]").forEach(function (input) {
    var out = document.querySelector(input.getAttribute("data-strength"));
    if (!out) { return; }
    var min = parseInt(out.getAttribute("data-min"), 10) || 8;
    var show = function () {
      var v = input.value;
      if (!v) { out.hidden = true; out.textContent = ""; out.removeAttribute("data-level"); return; }
      var pool = 0;
      if (/[a-z]/.test(v)) { pool += 26; }
      if (/[A-Z]/.test(v)) { pool += 26; }
      if (/[0-9]/.test(v)) { pool += 10; }
      if (/[^a-zA-Z0-9]/.test(v)) { pool += 33; }
      var distinct = {};
      for (var i = 0; i < v.length; i++) { distinct[v.charAt(i)] = true; }
      // Repeated characters add little: count each distinct one fully and
      // the repeats at a quarter.
      var n = Object.keys(distinct).length;
      var bits = (n + (v.length - n) / 4) * Math.log(Math.max(pool, 2)) / Math.LN2;
      var level = v.length < min ? "short" : bits < 45 ? "weak" : bits < 65 ? "fair" : "strong";
      out.textContent = out.getAttribute("data-" + level);
      out.setAttribute("data-level", level);
      out.hidden = false;
    };
    input.addEventListener("input", show);
    show();
  });
  // <input data-chooses="#id"> checks the radio button #id as soon as
  // something is typed into it: typing a password means "set a password".
  // Without script the server refuses the contradiction instead.
  document.querySelectorAll("input[data-chooses]").forEach(function (input) {
    var choice = document.querySelector(input.getAttribute("data-chooses"));
    if (!choice) { return; }
    input.addEventListener("input", function () {
      if (input.value) { choice.checked = true; }
    });
  });
})();
