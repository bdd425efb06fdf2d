// hmid passkeys: the WebAuthn ceremonies of the login page, the two-factor
// step and the security page. Served from the embedded assets only on those
// pages; without it (or without WebAuthn) the passkey controls stay hidden
// and the password forms work as before.
(function () {
  "use strict";
  if (!window.PublicKeyCredential || !window.fetch) { return; }

  // base64url (RFC 4648 §5) <-> ArrayBuffer, for browsers without
  // PublicKeyCredential.parse*OptionsFromJSON and toJSON.
  function toBuf(s) {
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) { s += "="; }
    var bin = atob(s), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { out[i] = bin.charCodeAt(i); }
    return out.buffer;
  }
  function toB64(buf) {
    var bytes = new Uint8Array(buf), bin = "";
    for (var i = 0; i < bytes.length; i++) { bin += String.fromCharCode(bytes[i]); }
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function creationOptions(o) {
    if (PublicKeyCredential.parseCreationOptionsFromJSON) { return PublicKeyCredential.parseCreationOptionsFromJSON(o); }
    o.challenge = toBuf(o.challenge);
    o.user.id = toBuf(o.user.id);
    (o.excludeCredentials || []).forEach(function (c) { c.id = toBuf(c.id); });
    return o;
  }
  function requestOptions(o) {
    if (PublicKeyCredential.parseRequestOptionsFromJSON) { return PublicKeyCredential.parseRequestOptionsFromJSON(o); }
    o.challenge = toBuf(o.challenge);
    (o.allowCredentials || []).forEach(function (c) { c.id = toBuf(c.id); });
    return o;
  }
  function credentialJSON(c) {
    if (c.toJSON) { return c.toJSON(); }
    var r = c.response, out = {
      id: c.id, rawId: toB64(c.rawId), type: c.type, authenticatorAttachment: c.authenticatorAttachment,
      clientExtensionResults: c.getClientExtensionResults ? c.getClientExtensionResults() : {},
      response: { clientDataJSON: toB64(r.clientDataJSON) }
    };
    if (r.attestationObject) {
      out.response.attestationObject = toB64(r.attestationObject);
      out.response.transports = r.getTransports ? r.getTransports() : [];
    } else {
      out.response.authenticatorData = toB64(r.authenticatorData);
      out.response.signature = toB64(r.signature);
      if (r.userHandle) { out.response.userHandle = toB64(r.userHandle); }
    }
    return out;
  }

  // post sends fields form-encoded (with the page's CSRF token) and returns
  // the JSON answer; an error answer rejects with its message.
  // A redirect answer (a console action done: it sets the page's flash
  // message) resolves to {redirect} without being followed.
  function post(url, fields) {
    var body = new URLSearchParams();
    Object.keys(fields).forEach(function (k) { if (fields[k] != null) { body.append(k, fields[k]); } });
    return fetch(url, { method: "POST", body: body, credentials: "same-origin", redirect: "manual", headers: { Accept: "application/json" } })
      .then(function (res) {
        if (res.type === "opaqueredirect") { return { redirect: null }; }
        return res.json().catch(function () { return {}; }).then(function (j) {
          if (!res.ok) { throw new Error(j.message || res.statusText); }
          return j;
        });
      });
  }

  function say(el, text, isError) {
    if (!el) { return; }
    el.textContent = text;
    el.classList.toggle("field-error", !!isError);
  }

  // A cancelled or timed-out browser dialog is no error worth a red text.
  function quiet(err) { return err && (err.name === "AbortError" || err.name === "NotAllowedError"); }

  document.querySelectorAll("[data-passkey-js]").forEach(function (el) { el.hidden = false; });
  document.querySelectorAll("[data-passkey-nojs]").forEach(function (el) { el.hidden = true; });

  // ---- Registration (security page) ----
  document.querySelectorAll("form[data-passkey=register]").forEach(function (form) {
    var status = form.querySelector("[data-passkey-status]");
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var field = function (n) { var i = form.elements[n]; return i ? i.value : null; };
      say(status, form.getAttribute("data-wait"));
      post(form.getAttribute("data-options"), { csrf_token: field("csrf_token"), password: field("password"), code: field("code") })
        .then(function (opts) { return navigator.credentials.create({ publicKey: creationOptions(opts.publicKey) }); })
        .then(function (cred) {
          return post(form.action, { csrf_token: field("csrf_token"), name: field("name"), credential: JSON.stringify(credentialJSON(cred)) });
        })
        .then(function (j) { window.location.assign(j.redirect || form.getAttribute("data-done")); })
        .catch(function (err) { say(status, quiet(err) ? form.getAttribute("data-cancelled") : err.message, !quiet(err)); });
    });
  });

  // ---- Sign-in (login page, two-factor step) ----
  var pending = null; // the AbortController of the waiting autofill request

  function signIn(form, mediation, signal) {
    var field = function (n) { var i = form.elements[n]; return i ? i.value : null; };
    return post(form.getAttribute("data-options"), { csrf_token: field("csrf_token"), state: field("state") })
      .then(function (opts) {
        var req = { publicKey: requestOptions(opts.publicKey), signal: signal };
        if (mediation) { req.mediation = mediation; }
        return navigator.credentials.get(req);
      })
      .then(function (cred) {
        return post(form.getAttribute("data-finish"), {
          csrf_token: field("csrf_token"), state: field("state"), return_to: field("return_to"),
          credential: JSON.stringify(credentialJSON(cred))
        });
      })
      .then(function (j) { window.location.assign(j.redirect); });
  }

  // Conditional mediation: passkeys offered in the email field's autofill
  // (autocomplete="username webauthn"). The challenge lives five minutes,
  // so a request still waiting is renewed before it expires.
  function autofill(form) {
    if (pending) { pending.abort(); }
    var ctl = new AbortController();
    pending = ctl;
    var renew = setTimeout(function () { if (pending === ctl) { autofill(form); } }, 4 * 60 * 1000);
    // The autofill request fails silently (a refused passkey included):
    // nobody asked for it, and the password form and the button stay.
    signIn(form, "conditional", ctl.signal).catch(function () {}).then(function () { clearTimeout(renew); });
  }

  document.querySelectorAll("[data-passkey=login], [data-passkey=second]").forEach(function (btn) {
    var form = btn.form || btn.closest("form");
    var status = document.querySelector(btn.getAttribute("data-status"));
    btn.addEventListener("click", function (ev) {
      ev.preventDefault();
      // The button's request replaces the waiting autofill one: a browser
      // runs one WebAuthn request at a time.
      if (pending) { pending.abort(); pending = null; }
      var ctl = new AbortController();
      say(status, btn.getAttribute("data-wait"));
      signIn(form, null, ctl.signal).catch(function (err) {
        say(status, quiet(err) ? btn.getAttribute("data-cancelled") : err.message, !quiet(err));
      });
    });
  });

  var auto = document.querySelector("form[data-passkey-autofill]");
  if (auto && PublicKeyCredential.isConditionalMediationAvailable) {
    PublicKeyCredential.isConditionalMediationAvailable().then(function (ok) { if (ok) { autofill(auto); } });
  }
})();
