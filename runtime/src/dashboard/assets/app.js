// The dashboard's one script (no inline script anywhere: the Content-Security-Policy
// allows only this file). It listens to /events and, when the queue's status changes,
// fetches the page again and swaps its live region; it asks before a destructive action.
(function () {
  'use strict';
  var conn = document.getElementById('conn');
  var asOf = document.getElementById('as-of');
  var live = document.querySelector('#live[data-live]');
  var last = 0;
  var timer = null;
  var missed = false;

  document.addEventListener('submit', function (e) {
    var b = e.submitter;
    var msg = b && b.getAttribute('data-confirm');
    if (msg && !window.confirm(msg)) {
      e.preventDefault();
    }
  });

  function say(state, text) {
    if (conn) {
      conn.setAttribute('data-state', state);
      conn.textContent = text;
    }
  }

  function busy() {
    var a = document.activeElement;
    return a && live.contains(a) && a.matches('input, select, textarea');
  }

  function refresh() {
    if (document.hidden) {
      missed = true;
      return;
    }
    if (busy()) {
      schedule();
      return;
    }
    last = Date.now();
    fetch(location.href, { headers: { Accept: 'text/html' }, credentials: 'same-origin', cache: 'no-store' })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) {
          return;
        }
        var doc = new DOMParser().parseFromString(html, 'text/html');
        var fresh = doc.getElementById('live');
        if (fresh) {
          live.replaceChildren.apply(live, Array.prototype.slice.call(fresh.childNodes));
        }
        var t = doc.getElementById('as-of');
        if (t && asOf) {
          asOf.textContent = t.textContent;
        }
        var s = doc.getElementById('item-state');
        var cur = document.getElementById('item-state');
        if (s && cur) {
          cur.textContent = s.textContent;
          cur.className = s.className;
        }
      })
      .catch(function () { say('offline', 'offline'); });
  }

  function schedule() {
    if (timer) {
      return;
    }
    var wait = Math.max(0, 1000 - (Date.now() - last));
    timer = setTimeout(function () { timer = null; refresh(); }, wait);
  }

  function listen() {
    var es = new EventSource('/events');
    var first = true;
    es.addEventListener('open', function () { say('live', 'live'); });
    es.addEventListener('error', function () { say('offline', 'reconnecting…'); first = true; });
    es.addEventListener('status', function () {
      say('live', 'live');
      // The first status is the one this page was drawn from (or newer): draw it again
      // only when it arrives well after the page.
      if (first) {
        first = false;
        if (performance.now() < 2000) {
          return;
        }
      }
      schedule();
    });
  }

  if (live && window.EventSource) {
    // After the load event: a stream opened while the page loads keeps it "loading" (the
    // browser's spinner, and a WebDriver waiting for the navigation to end).
    if (document.readyState === 'complete') {
      listen();
    } else {
      window.addEventListener('load', function () { setTimeout(listen, 0); });
    }
  } else {
    say('static', live ? 'no live updates in this browser' : '');
  }

  document.addEventListener('visibilitychange', function () {
    if (!document.hidden && missed) {
      missed = false;
      schedule();
    }
  });
})();
