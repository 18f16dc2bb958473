/*
 * memledger.js - the page's door to the WebAssembly core (ml_core.js, built by `make web` from
 * web/memledger_web.c and the library). Every call is bytes in, bytes out: a request names the
 * command's options exactly as the CLI takes them (argv) and carries the files' text by name;
 * the answer is what the CLI would print (JSON, text, SVG) and the files it would write, or
 * its one-line error. Nothing here touches the network or storage.
 */
'use strict';

var MemLedger = (function () {
  var core = null;

  /* Call export fn with a string argument; the C side returns a malloc'ed NUL-terminated string. */
  function callString(fn, arg) {
    var n = core.lengthBytesUTF8(arg) + 1;
    var p = core._malloc(n);
    core.stringToUTF8(arg, p, n);
    var r = core['_' + fn](p, n - 1);
    core._free(p);
    var s = core.UTF8ToString(r);
    core._free(r);
    return s;
  }

  function callJson(fn, request) {
    var answer = JSON.parse(callString(fn, JSON.stringify(request || {})));
    if (!answer.ok && !answer.error) answer.error = 'memledger: ' + fn + ' failed';
    return answer;
  }

  function fmt(fn, bytes) {
    var r = core['_' + fn](Number(bytes));
    var s = core.UTF8ToString(r);
    core._free(r);
    return s;
  }

  var ready = (typeof createMemLedgerCore === 'function'
    ? createMemLedgerCore()
    : Promise.reject(new Error('ml_core.js is missing (run make web)'))
  ).then(function (m) {
    core = m;
    return api;
  });

  var api = {
    ready: ready,
    /* request: {argv: [...options...], files: {name: text}} -> {ok, exit, json, text, svg, files, error} */
    train: function (req) { return callJson('mlw_train', req); },
    infer: function (req) { return callJson('mlw_infer', req); },
    diagnose: function (req) { return callJson('mlw_diagnose', req); },
    fit: function (req) { return callJson('mlw_fit', req); },
    models: function () { return callJson('mlw_models', {}); },
    gpus: function () { return callJson('mlw_gpus', {}); },
    /* The CLI's own number formats: "14.50 GiB", "571.62 MiB". */
    fmtGib: function (b) { return fmt('mlw_fmt_gib', b); },
    fmtBytes: function (b) { return fmt('mlw_fmt_bytes', b); },
    version: function () { return core.UTF8ToString(core._mlw_version()); },
    /* The language of the reports, the picture and fit's plans: 'zh_CN' (po/zh_CN.po compiled in)
     * or English. */
    setLanguage: function (lang) { core._mlw_set_lang(lang === 'zh_CN' ? 1 : 0); },
  };
  return api;
})();
