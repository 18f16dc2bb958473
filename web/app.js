/*
 * app.js - the page: gathers the user's files and choices, asks the core (memledger.js) exactly
 * what the CLI would be asked, and shows the answer. Every figure shown comes from the core's
 * JSON in exact bytes and is formatted by the core's own formatter; elements with class "fig"
 * carry data-bytes (the exact value) and data-key (where it is in the JSON).
 */
'use strict';

(function () {
  var t = memledgerTranslator(navigator.languages || [navigator.language]);
  var $ = function (id) { return document.getElementById(id); };
  var ROLES = ['config', 'deepspeed', 'model', 'log'];
  var DEFAULT_NAME = { config: 'train.yaml', deepspeed: 'deepspeed.json', model: 'config.json', log: 'oom.log' };
  var names = { config: '', deepspeed: '', model: '', log: '' }; /* file names as the user gave them */
  var ml = null;
  var timer = 0;
  var svgUrl = null;

  /* ---- text of the page ------------------------------------------------------------------ */

  function translatePage() {
    Array.prototype.forEach.call(document.querySelectorAll('[data-t]'), function (el) {
      el.textContent = t(el.getAttribute('data-t'));
    });
    Array.prototype.forEach.call(document.querySelectorAll('[data-t-placeholder]'), function (el) {
      el.placeholder = t(el.getAttribute('data-t-placeholder'));
    });
    document.title = 'memledger';
  }

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'className') e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }

  /* A figure: its text from the core's formatter, its exact bytes and JSON path alongside. */
  function fig(bytes, key, format) {
    var s = bytes === null || bytes === undefined ? '—' : (format === 'bytes' ? ml.fmtBytes(bytes) : ml.fmtGib(bytes));
    var e = el('span', { className: 'fig', text: s, 'data-key': key });
    if (bytes !== null && bytes !== undefined) e.setAttribute('data-bytes', String(bytes));
    return e;
  }

  function row(cells, header) {
    return el('tr', {}, cells.map(function (c) {
      var td = el(header ? 'th' : 'td');
      if (c && c.nodeType) td.appendChild(c);
      else td.textContent = c === undefined || c === null ? '' : String(c);
      return td;
    }));
  }

  function fill(tbody, rows) {
    while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
    rows.forEach(function (r) { tbody.appendChild(r); });
  }

  /* ---- inputs ---------------------------------------------------------------------------- */

  function text(role) { return $('text-' + role).value; }
  function fileName(role) { return names[role] || DEFAULT_NAME[role]; }
  function mode() { return $('mode-infer').checked ? 'infer' : 'train'; }

  function setFile(role, name, content) {
    names[role] = name || '';
    $('text-' + role).value = content;
    $('name-' + role).textContent = name || '';
    schedule();
  }

  function readFile(role, file) {
    var r = new FileReader();
    r.onload = function () { setFile(role, file.name, String(r.result)); };
    r.readAsText(file);
  }

  /* Which box a dropped file belongs in, from its name and first bytes. */
  function roleOf(name, head) {
    if (/\.ya?ml$/i.test(name)) return 'config';
    if (/\.json$/i.test(name) || /^\s*\{/.test(head)) {
      if (/"(zero_optimization|train_micro_batch_size_per_gpu|train_batch_size|fp16|bf16)"/.test(head)) return 'deepspeed';
      return 'model';
    }
    return 'log';
  }

  function dropFiles(list) {
    Array.prototype.forEach.call(list, function (file) {
      var r = new FileReader();
      r.onload = function () {
        var s = String(r.result);
        setFile(roleOf(file.name, s.slice(0, 4096)), file.name, s);
      };
      r.readAsText(file);
    });
  }

  /* Words of a command line, with "..." and '...' quoting as a shell would. */
  function words(s) {
    var out = [];
    var re = /"([^"]*)"|'([^']*)'|(\S+)/g;
    var m;
    while ((m = re.exec(s))) out.push(m[1] !== undefined ? m[1] : m[2] !== undefined ? m[2] : m[3]);
    return out;
  }

  function given(role) { return text(role).trim() !== ''; }

  /* The files the core gets, by the names the options use. */
  function files() {
    var f = {};
    ROLES.forEach(function (r) { if (given(r)) f[fileName(r)] = text(r); });
    return f;
  }

  /* The options of one command, exactly as the CLI takes them. */
  function argv(cmd) {
    var a = [];
    var model = $('model').value.trim();
    var gpu = $('gpu').value.trim();
    var n = $('num-gpus').value.trim();
    var nodes = $('nodes').value.trim();
    if (cmd === 'diagnose') {
      a.push(fileName('log'));
      if (model) a.push('--model', model);
      else if (given('model')) a.push('--model', fileName('model'));
    } else if (model) {
      a.push(model);
    } else if (given('model')) {
      a.push(fileName('model'));
    }
    if (mode() === 'train' || cmd === 'diagnose') {
      if (given('config')) a.push('--config', fileName('config'));
      if (given('deepspeed')) a.push('--deepspeed', fileName('deepspeed'));
    }
    if (gpu) a.push('--gpu', gpu);
    if (n && n !== '1') a.push('--num-gpus', n);
    if (nodes && nodes !== '1') a.push('--nodes', nodes);
    if (cmd !== 'diagnose') a = a.concat(words($('extra').value));
    if (mode() === 'infer' && cmd !== 'diagnose') {
      var e = $('engine').value;
      if (e !== 'hf') a.push('--engine', e);
      if (cmd === 'fit') a.push('--serve');
    } else if (mode() === 'infer' && $('engine').value !== 'hf') {
      a.push('--engine', $('engine').value);
    }
    return a;
  }

  function quote(w) { return /^[\w@%+=:,./-]+$/.test(w) ? w : "'" + w.replace(/'/g, "'\\''") + "'"; }

  /* ---- answers --------------------------------------------------------------------------- */

  function showError(msg) {
    $('error').hidden = !msg;
    $('error-text').textContent = msg || '';
  }

  function verdict(j) {
    var g = j.per_gpu;
    /* infer's JSON has fits and the engine's start-up error rather than a verdict. */
    var v = g.verdict || (j.serving && j.serving.error ? 'no_start' : g.fits ? 'fits' : 'no_fit');
    var id = v === 'does not fit' ? 'no_fit' : v; /* train's JSON spells it "does not fit" (json.md) */
    var w = $('verdict-word');
    w.textContent = t('verdict_' + id);
    w.setAttribute('data-verdict', v);
    $('verdict').className = 'verdict ' + (id === 'no_start' ? 'no_fit' : id);
    var line = $('verdict-line');
    while (line.firstChild) line.removeChild(line.firstChild);
    var parts = t('verdict_line', '\u0001', '\u0002', j.gpu.name, '\u0003').split(/([\u0001-\u0003])/);
    parts.forEach(function (p) {
      if (p === '\u0001') line.appendChild(fig(g.device_used_bytes, 'per_gpu.device_used_bytes'));
      else if (p === '\u0002') line.appendChild(fig(j.gpu.capacity_bytes, 'gpu.capacity_bytes'));
      else if (p === '\u0003') line.appendChild(el('span', { id: 'peak-phase', className: 'phase', text: g.peak_phase }));
      else line.appendChild(document.createTextNode(p));
    });
    line.appendChild(document.createTextNode(' · '));
    if (j.serving && j.serving.error) line.appendChild(el('span', { className: 'engine-error', text: j.serving.error + ' · ' }));
    var fitsText = g.fits ? t('headroom', '\u0001') : t('short_by', '\u0001');
    var key = g.fits ? 'per_gpu.headroom_bytes' : 'per_gpu.deficit_bytes';
    fitsText.split('\u0001').forEach(function (p, i) {
      if (i) line.appendChild(fig(g.fits ? g.headroom_bytes : g.deficit_bytes, key));
      line.appendChild(document.createTextNode(p));
    });
  }

  function peakTable(j) {
    var g = j.per_gpu;
    var rows = [
      row([t('fig_allocated'), fig(g.peak_allocated_bytes, 'per_gpu.peak_allocated_bytes'), t('fig_allocated_src')]),
      row([t('fig_reserved'), fig(g.peak_reserved_bytes, 'per_gpu.peak_reserved_bytes'), t('fig_reserved_src')]),
      row([t('fig_device'), fig(g.device_used_bytes, 'per_gpu.device_used_bytes'), t('fig_device_src')]),
      row([t('fig_capacity'), fig(j.gpu.capacity_bytes, 'gpu.capacity_bytes'), j.gpu.name]),
      g.fits ? row([t('fig_headroom'), fig(g.headroom_bytes, 'per_gpu.headroom_bytes'), ''])
             : row([t('fig_deficit'), fig(g.deficit_bytes, 'per_gpu.deficit_bytes'), '']),
    ];
    fill($('peak-table').tBodies[0], rows);
  }

  /* "all", "all but load" or the list, as the CLI's table writes the phases a component is live in. */
  function liveIn(phases, active) {
    var live = active.filter(function (p) { return phases.indexOf(p) >= 0; });
    if (live.length === active.length) return t('live_all');
    var butLoad = active.filter(function (p) { return p !== 'load'; });
    if (active.indexOf('load') >= 0 && live.length === butLoad.length && live.indexOf('load') < 0) return t('live_all_but_load');
    return live.join(', ');
  }

  function ledgerTable(j) {
    var t0 = $('ledger-table');
    fill(t0.tHead, [row([t('col_component'), t('col_rule'), t('col_bytes'), t('col_live'), t('col_figure'), t('col_source')], true)]);
    var active = j.phases.map(function (p) { return p.phase; });
    fill(t0.tBodies[0], j.per_gpu.components.map(function (c, i) {
      var r = row([c.id, c.rule, fig(c.bytes, 'per_gpu.components.' + i + '.bytes'), liveIn(c.phases, active),
        c.figure, c.source]);
      r.setAttribute('data-component', c.id);
      return r;
    }));
  }

  function phaseTable(j) {
    var t0 = $('phase-table');
    fill(t0.tHead, [row([t('col_phase'), t('fig_allocated'), t('fig_reserved')], true)]);
    fill(t0.tBodies[0], j.phases.map(function (p, i) {
      var r = row([p.phase, fig(p.allocated_bytes, 'phases.' + i + '.allocated_bytes'),
        fig(p.reserved_bytes, 'phases.' + i + '.reserved_bytes')]);
      r.setAttribute('data-phase', p.phase);
      if (p.phase === j.per_gpu.peak_phase) r.className = 'peak';
      return r;
    }));
  }

  function list(box, ul, items) {
    $(box).hidden = !items || !items.length;
    fill($(ul), (items || []).map(function (s) { return el('li', { text: typeof s === 'string' ? s : JSON.stringify(s) }); }));
  }

  function picture(box, svg) {
    /* The core's own SVG (escaped text, no scripts): parsed as SVG, not as HTML. */
    var root = null;
    if (svg && /^(<\?xml[^>]*>\s*)?<svg[\s>]/.test(svg)) {
      var doc = new DOMParser().parseFromString(svg, 'image/svg+xml');
      if (!doc.getElementsByTagName('parsererror').length) root = doc.documentElement;
    }
    fill($(box), root && root.nodeName === 'svg' ? [document.importNode(root, true)] : []);
  }

  function showLedger(ans) {
    var j = ans.json;
    $('result').hidden = false;
    $('verdict').hidden = false;
    verdict(j);
    picture('picture', ans.svg || '');
    if (svgUrl) URL.revokeObjectURL(svgUrl);
    svgUrl = URL.createObjectURL(new Blob([ans.svg || ''], { type: 'image/svg+xml' }));
    $('download-svg').href = svgUrl;
    if (j.per_gpu && j.per_gpu.components) {
      peakTable(j);
      ledgerTable(j);
      phaseTable(j);
    }
    list('notes-box', 'notes', j.notes);
    list('warnings-box', 'warnings', j.warnings);
    $('report').textContent = ans.text || '';
  }

  /* The primary event's figures and the ledger's beside them, from diagnose's JSON. */
  function diagnoseTable(j) {
    var rows = [];
    var i = j && typeof j.primary === 'number' ? j.primary : -1;
    var ev = i >= 0 && j.events ? j.events[i] : null;
    if (ev) {
      [['requested_bytes', 'log_requested'], ['allocated_bytes', 'log_allocated'],
        ['reserved_unallocated_bytes', 'log_reserved_unallocated'], ['reserved_bytes', 'log_reserved'],
        ['free_bytes', 'log_free'], ['total_bytes', 'log_total']].forEach(function (k) {
        if (ev[k[0]] !== null && ev[k[0]] !== undefined) {
          rows.push(row([t(k[1]), fig(ev[k[0]], 'events.' + i + '.' + k[0], 'bytes')]));
        }
      });
    }
    if (j && j.ledger) {
      rows.push(row([t('ledger_allocated', j.ledger.phase), fig(j.ledger.allocated_bytes, 'ledger.allocated_bytes', 'bytes')]));
      rows.push(row([t('ledger_device', j.ledger.phase), fig(j.ledger.device_used_bytes, 'ledger.device_used_bytes', 'bytes')]));
    }
    fill($('diagnose-table').tBodies[0], rows);
    $('diagnose-table').hidden = !rows.length;
  }

  function showDiagnose(ans) {
    $('diagnose').hidden = false;
    diagnoseTable(ans.json);
    picture('diagnose-picture', ans.svg || '');
    $('diagnose-report').textContent = ans.text || '';
  }

  function download(name, content) {
    var a = el('a', { download: name, href: URL.createObjectURL(new Blob([content], { type: 'text/plain' })) });
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 0);
  }

  function planItem(p, i, req, serving) {
    var li = el('li', { 'data-plan': String(i + 1) });
    var summary = p.summary || (p.changes || []).map(function (c) { return c.key + ' ' + c.to; }).join(', ');
    li.appendChild(el('strong', { text: summary }));
    li.appendChild(document.createTextNode(' — '));
    var line = serving ? t('fit_serve_line', p.kv_tokens, p.max_model_len, p.max_concurrency)
                       : t('fit_plan_line', '\u0001', '\u0002');
    line.split(/([\u0001\u0002])/).forEach(function (s) {
      if (s === '\u0001') li.appendChild(fig(p.device_used_bytes, 'plans.' + i + '.device_used_bytes'));
      else if (s === '\u0002') li.appendChild(fig(p.headroom_bytes, 'plans.' + i + '.headroom_bytes'));
      else li.appendChild(document.createTextNode(s));
    });
    var ul = el('ul', { className: 'changes' });
    (p.changes || []).forEach(function (c) {
      ul.appendChild(el('li', {}, [el('code', { text: c['in'] }), ' ' + c.key + ': ' + c.from + ' → ' + c.to]));
    });
    li.appendChild(ul);
    if (serving) return li; /* the engine's flags: nothing to patch */
    var b = el('button', { type: 'button', className: 'download-plan', text: t('download_files') });
    b.addEventListener('click', function () {
      var a = ml.fit({ argv: req.argv.concat(['--write', 'memledger-plan', '--plan', String(i + 1)]), files: req.files });
      if (!a.ok) { showError(a.error); return; }
      (a.files || []).forEach(function (f) { download(f.name.replace(/^.*\//, ''), f.text); });
    });
    li.appendChild(b);
    return li;
  }

  function showFit(ans, req) {
    var plans = (ans.json && ans.json.plans) || [];
    $('fit').hidden = false;
    var serving = req.argv.indexOf('--serve') >= 0;
    fill($('plans'), plans.length ? plans.map(function (p, i) { return planItem(p, i, req, serving); })
      : [el('li', { text: t('fit_none') })]);
  }

  /* ---- the run --------------------------------------------------------------------------- */

  function clearResults() {
    ['verdict', 'result', 'diagnose', 'fit'].forEach(function (id) { $(id).hidden = true; });
  }

  function compute() {
    timer = 0;
    if (!ml) return;
    var t0 = performance.now();
    showError('');
    clearResults();
    var cmd = mode();
    var haveRun = given('config') || given('model') || $('model').value.trim() !== '';
    var argvRun = argv(cmd);
    var cmds = [];
    if (haveRun) cmds.push(['memledger', cmd].concat(argvRun).map(quote).join(' '));
    if (given('log')) cmds.push(['memledger', 'diagnose'].concat(argv('diagnose')).map(quote).join(' '));
    $('command').textContent = cmds.join('\n');
    var f = files();
    var errors = [];
    if (haveRun) {
      var ans = ml[cmd]({ argv: argvRun, files: f });
      if (ans.ok) {
        showLedger(ans);
        var req = { argv: argv('fit'), files: f };
        var fa = ml.fit(req);
        if (fa.ok) showFit(fa, req);
        else errors.push(fa.error);
      } else {
        errors.push(ans.error);
      }
    }
    if (given('log')) {
      var d = ml.diagnose({ argv: argv('diagnose'), files: f });
      if (d.ok || d.json) showDiagnose(d);
      else errors.push(d.error);
    }
    showError(errors.filter(function (e, i) { return errors.indexOf(e) === i; }).join('\n'));
    /* When the answer is on the page, and how long the core took (the browser test reads both). */
    document.body.setAttribute('data-compute-ms', String(performance.now() - t0));
    document.body.setAttribute('data-answered', String(performance.now()));
  }

  function schedule() {
    if (timer) clearTimeout(timer);
    timer = setTimeout(compute, 120);
  }

  function loadExample(name) {
    var ex = MEMLEDGER_EXAMPLES[name];
    ROLES.forEach(function (r) {
      var f = ex.files[r];
      names[r] = f ? f.name : '';
      $('text-' + r).value = f ? f.text : '';
      $('name-' + r).textContent = f ? f.name : '';
    });
    $('model').value = ex.model || '';
    $('gpu').value = ex.gpu || '';
    $('num-gpus').value = String(ex.num_gpus || 1);
    $('nodes').value = '1';
    $('extra').value = '';
    $('mode-train').checked = true;
    showMode();
    compute();
  }

  function reset() {
    ROLES.forEach(function (r) { setFile(r, '', ''); $('file-' + r).value = ''; });
    $('model').value = '';
    $('gpu').value = '';
    $('num-gpus').value = '1';
    $('nodes').value = '1';
    $('extra').value = '';
    $('command').textContent = '';
    showError('');
    clearResults();
  }

  function options(list, items) {
    fill($(list), items.map(function (it) { return el('option', { value: it.value, label: it.label }); }));
  }

  /* Serving reads no training YAML or DeepSpeed JSON: their boxes go while it is chosen. */
  function showMode() {
    var infer = mode() === 'infer';
    $('engine-field').hidden = !infer;
    ['config', 'deepspeed'].forEach(function (r) { document.querySelector('.file[data-role="' + r + '"]').hidden = infer; });
  }

  function wire() {
    ROLES.forEach(function (r) {
      $('file-' + r).addEventListener('change', function (e) { if (e.target.files[0]) readFile(r, e.target.files[0]); });
      $('text-' + r).addEventListener('input', schedule);
      document.querySelector('.file[data-role="' + r + '"] .clear').addEventListener('click', function () {
        $('file-' + r).value = '';
        setFile(r, '', '');
      });
    });
    ['model', 'gpu', 'num-gpus', 'nodes', 'engine', 'extra'].forEach(function (id) { $(id).addEventListener('input', schedule); });
    ['mode-train', 'mode-infer'].forEach(function (id) {
      $(id).addEventListener('change', function () { showMode(); schedule(); });
    });
    $('load-seed').addEventListener('click', function () { loadExample('seed'); });
    $('reset').addEventListener('click', reset);
    document.addEventListener('dragover', function (e) { e.preventDefault(); });
    document.addEventListener('drop', function (e) {
      if (e.target && e.target.tagName === 'TEXTAREA') return;
      e.preventDefault();
      dropFiles(e.dataTransfer.files);
    });
  }

  /* The built-in models and GPUs for the pickers. */
  function catalogs() {
    var models = ml.models();
    if (models.ok) options('model-list', (models.json.models || models.json).map(function (m) { return { value: m.name, label: m.hub_id || m.name }; }));
    var gpus = ml.gpus();
    if (gpus.ok) options('gpu-list', (gpus.json.gpus || gpus.json).map(function (g) { return { value: g.name, label: ml.fmtGib(g.capacity_bytes) }; }));
  }

  function start(core) {
    ml = core;
    /* The module's own text (reports, the picture, fit's plans) in the page's language. */
    ml.setLanguage(memledgerLanguages(navigator.languages || [navigator.language])[0]);
    document.body.setAttribute('data-core-ready', String(performance.now()));
    $('footer').textContent = t('footer', ml.version());
    $('status').hidden = true;
    wire();
    /* #seed opens the page on the seed example (the browser test measures that); the pickers'
     * lists are filled after the first answer. */
    if (location.hash === '#seed') loadExample('seed');
    setTimeout(catalogs, 0);
    document.body.setAttribute('data-ready', String(performance.now()));
  }

  translatePage();
  MemLedger.ready.then(start, function (e) {
    $('status').textContent = t('load_failed', e && e.message ? e.message : String(e));
    $('status').className = 'status error';
  });
})();
