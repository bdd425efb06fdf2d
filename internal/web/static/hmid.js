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
})();
