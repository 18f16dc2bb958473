/*
 * strings.js - every string the page shows, in one table per language. The page picks the table
 * of the browser's first preferred language it has (navigator.languages), key by key, falling
 * back to English; zh_CN is the hook for the Chinese text (the ecosystem issue fills it in).
 * Placeholders: {0}, {1}, ... in order of the arguments to t().
 */
'use strict';

var MEMLEDGER_STRINGS = {
  en: {
    'title': 'memledger — where every byte of GPU memory goes',
    'tagline': 'Reads your LLaMA-Factory YAML, DeepSpeed JSON, model config.json and out-of-memory log, and says where GPU memory goes, phase by phase, with the rule and source of each figure.',
    'privacy': 'Everything runs in this page: your files are read by your browser and never leave it. The page makes no network requests; it also works saved to disk and opened from there.',
    'loading': 'Loading the memledger core…',
    'load_failed': 'The memledger core could not be loaded: {0}',
    'inputs': 'Your run',
    'mode': 'What to estimate',
    'mode_train': 'Training',
    'mode_infer': 'Inference / serving',
    'model': 'Model',
    'model_hint': 'A built-in model, a Hugging Face id, or drop its config.json. Empty: the YAML\'s model_name_or_path.',
    'model_builtin': '— from the YAML or config.json —',
    'config': 'LLaMA-Factory training YAML',
    'deepspeed': 'DeepSpeed JSON',
    'deepspeed_hint': 'Overrides the YAML\'s deepspeed: key. Empty: the file that key names, if you gave it here.',
    'model_config': 'Model config.json',
    'log': 'Out-of-memory log',
    'log_hint': 'One rank\'s log or several concatenated; diagnose reads the messages and prices the fixes with the ledger above.',
    'paste': 'or paste it here',
    'choose': 'Choose file',
    'clear': 'Clear',
    'gpu': 'GPU',
    'gpu_hint': 'A card name (a100-80g, h100, dcu-16g, 910b…) or a size such as 16G or 15.5GiB.',
    'num_gpus': 'GPUs per node',
    'nodes': 'Nodes',
    'engine': 'Engine',
    'extra': 'More options',
    'extra_hint': 'Any option of the command, as on the command line (memledger train --help).',
    'seed': 'Try the seed example',
    'seed_hint': 'Qwen2.5-14B, LoRA r=64, DeepSpeed ZeRO-3 on 4 cards of 16 GB, and its OOM log after a checkpoint save.',
    'reset': 'Start over',
    'drop': 'Drop files anywhere on the page: a .yaml is the training YAML, a DeepSpeed .json or a model config.json goes to its box, anything else is read as a log.',
    'same_as': 'The same as',
    'error': 'Error',
    'verdict': 'Verdict',
    'verdict_fits': 'fits',
    'verdict_tight': 'tight',
    'verdict_no_fit': 'does not fit',
    'verdict_no_start': 'does not start',
    'verdict_line': '{0} per GPU of {1} usable ({2}); peak in {3}',
    'headroom': 'headroom {0}',
    'short_by': 'short by {0}',
    'picture': 'The ledger as a picture',
    'download_svg': 'Download the picture (SVG)',
    'peak': 'At the peak',
    'fig_allocated': 'allocated',
    'fig_allocated_src': 'torch.cuda.max_memory_allocated()',
    'fig_reserved': 'reserved',
    'fig_reserved_src': 'torch.cuda.max_memory_reserved()',
    'fig_device': 'device',
    'fig_device_src': 'nvidia-smi / rocm-smi (context, NCCL)',
    'fig_capacity': 'capacity',
    'fig_headroom': 'headroom',
    'fig_deficit': 'short by',
    'ledger': 'The ledger, per GPU',
    'col_component': 'component',
    'col_rule': 'rule',
    'col_bytes': 'GiB',
    'col_live': 'live in',
    'col_figure': 'figure',
    'col_source': 'source',
    'phases': 'Per phase',
    'col_phase': 'phase',
    'notes': 'Notes',
    'warnings': 'Warnings',
    'diagnose': 'What the log says',
    'diagnose_picture': 'The message beside the ledger',
    'no_oom': 'No out-of-memory message in this log.',
    'log_requested': 'the request that failed',
    'log_allocated': 'allocated by PyTorch',
    'log_reserved_unallocated': 'reserved by PyTorch but unallocated',
    'log_reserved': 'reserved by PyTorch in total',
    'log_free': 'free on the device',
    'log_total': 'the device\'s total',
    'ledger_allocated': 'the ledger\'s allocated in {0}',
    'ledger_device': 'the ledger\'s device figure in {0}',
    'fit': 'Plans that fit',
    'fit_intro': 'Cheapest first; each plan lists its changes. Download a plan\'s patched files to run it.',
    'fit_plan': 'Plan {0}: {1}',
    'fit_plan_line': '{0} per GPU, headroom {1}',
    'fit_serve_line': '{0} KV tokens, max_model_len {1}, concurrency {2}',
    'fit_none': 'No plan within the knobs searched reaches the target.',
    'download_files': 'Download the patched files',
    'report': 'The full text report',
    'live_all': 'all',
    'live_all_but_load': 'all but load',
    'footer': 'memledger {0}: the same C code as the command-line tool, compiled to WebAssembly.',
  },
  zh_CN: {
  },
};

/* The tables to consult, best first: the browser's preferred languages we have, then English. */
function memledgerLanguages(prefs) {
  var out = [];
  (prefs || []).forEach(function (p) {
    var tag = String(p).replace('-', '_');
    var base = tag.split('_')[0];
    [tag, base === 'zh' ? 'zh_CN' : base].forEach(function (k) {
      if (MEMLEDGER_STRINGS[k] && out.indexOf(k) < 0) out.push(k);
    });
  });
  if (out.indexOf('en') < 0) out.push('en');
  return out;
}

function memledgerTranslator(prefs) {
  var langs = memledgerLanguages(prefs);
  return function t(key) {
    var s;
    for (var i = 0; i < langs.length && s === undefined; i++) s = MEMLEDGER_STRINGS[langs[i]][key];
    if (s === undefined) s = key;
    var args = arguments;
    return s.replace(/\{(\d)\}/g, function (m, n) { return String(args[Number(n) + 1]); });
  };
}
