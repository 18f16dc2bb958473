#!/usr/bin/env python3
"""no_english.py --json DOC... -- OUTPUT... - no English sentence is left in memledger's zh_CN output.

Each OUTPUT is a file holding what one command printed (stdout and stderr) under LANGUAGE=zh_CN.
A line fails when it holds a run of 3 or more English prose words that are not allowed, where:

- a token is what lies between blanks and CJK characters; its leading and trailing ASCII
  punctuation is stripped;
- a prose word is a token that is a plain lowercase word ("frozen") or a capitalised one
  ("Training"), two letters or more. Every other token is neutral: numbers and units (2, GiB,
  B, x), identifiers and keys (weights_frozen, zero_optimization.stage, after_save), option
  names (--gpu), file names and paths, versions, formulas (s^2, max(10), acronyms and names
  spelled with an inner capital (GPU, DeepSpeed, LoRA, vLLM, ZeRO-3), single letters;
- allowed prose words are (1) the keys and the one-word string values of the commands' own JSON
  documents (each DOC: the ids, enum values and setting names memledger prints as data, such as
  eager, on, lora, forward; `models --json` gives the model families), and (2) the programs and
  Python packages below, whose names are lowercase words;
- a run is the tokens of a line between two CJK characters: neutral tokens neither count nor
  break it, a CJK character (Chinese text or full-width punctuation) ends it;
- every output must be UTF-8 (a message cut short in a fixed buffer breaks a character);
- text memledger quotes rather than writes is left out: code spans in backquotes, values in
  Chinese quotes (“...”, what the user typed), and the log lines diagnose cites after their
  FILE:LINE reference.
"""
import json
import re
import sys

PROGRAMS = {'transformers', 'torch', 'python', 'deepspeed', 'peft', 'bitsandbytes', 'accelerate',
            'vllm', 'sglang', 'torchrun', 'liger', 'unsloth', 'trl', 'litgpt', 'torchtune',
            'llamafactory', 'memledger', 'pytorch', 'cmake', 'pip', 'man', 'dmesg'}
CJK = re.compile('[\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\u3000-\u303f]')
PROSE = re.compile(r'^(?:[a-z]{2,}|[A-Z][a-z]+)$')
PUNCT = '()[]{},;:.!?"\'<>*'


def words_of(line):
    line = re.sub(r'`[^`]*`', ' ', line)
    line = re.sub('\u201c[^\u201d]*\u201d', ' ', line)
    m = re.match(r'^\s+\S+:\d+  ', line)  # diagnose's evidence: FILE:LINE  <the log's own text>
    if m:
        line = m.group(0)
    runs, cur = [], []
    for tok in re.split(r'(\s+|' + CJK.pattern + ')', line):
        if not tok or tok.isspace():
            continue
        if CJK.fullmatch(tok):
            runs.append(cur)
            cur = []
            continue
        cur.append(tok.strip(PUNCT))
    runs.append(cur)
    return runs


def data_words(doc, out):
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.add(k.lower())
            data_words(v, out)
    elif isinstance(doc, list):
        for v in doc:
            data_words(v, out)
    elif isinstance(doc, str) and PROSE.match(doc):
        out.add(doc.lower())


def main():
    args = sys.argv[1:]
    split = args.index('--')
    allow = set(PROGRAMS)
    bad = 0
    for path in args[1:split]:
        with open(path, encoding='utf-8') as f:
            try:
                data_words(json.load(f), allow)
            except (ValueError, RecursionError) as e:
                print(f'{path}: not a JSON document ({e})')
                bad += 1
    for path in args[split + 1:]:
        raw = open(path, 'rb').read()
        try:
            text = raw.decode('utf-8')
        except UnicodeDecodeError as e:
            # A translation longer than the buffer it is written into is cut inside a character.
            print(f'{path}: not UTF-8 at byte {e.start} (a message cut short?): {raw[max(0, e.start - 60):e.start + 4]!r}')
            bad += 1
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for run in words_of(line):
                prose = [w for w in run if PROSE.match(w) and w.lower() not in allow]
                if len(prose) >= 3:
                    print(f'{path}:{n}: English left ({" ".join(prose)}): {line.strip()[:160]}')
                    bad += 1
                    break
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
