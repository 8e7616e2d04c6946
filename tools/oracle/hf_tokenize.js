// Oracle for the tokenizer tests: Hugging Face's `tokenizers` (npm, Rust binary) encodes and
// decodes every input of a JSON array and writes the results as JSON.
//
// usage: node hf_tokenize.js ORACLE_DIR TOKENIZER_JSON INPUTS_JSON OUTPUT_JSON [--bench]
//   output: {"cases": [{"ids": [...] (no special tokens), "ids_special": [...],
//                       "decoded": decode(ids, false), "decoded_skip": decode(ids_special, true)}],
//            "load_seconds": s, "encode_seconds": s (sequential encode of all inputs, no special)}
'use strict';
const fs = require('fs');
const path = require('path');

async function main() {
  const [oracleDir, tokenizerJson, inputsJson, outputJson, ...flags] = process.argv.slice(2);
  const { Tokenizer } = require(path.join(oracleDir, 'node_modules', 'tokenizers'));
  const inputs = JSON.parse(fs.readFileSync(inputsJson, 'utf8'));
  const bench = flags.includes('--bench');
  let t0 = process.hrtime.bigint();
  const tok = Tokenizer.fromFile(tokenizerJson);
  const loadSeconds = Number(process.hrtime.bigint() - t0) / 1e9;

  // Timed pass: sequential single encodes (RAYON_NUM_THREADS=1 keeps the Rust side on one thread).
  t0 = process.hrtime.bigint();
  const plain = [];
  for (const text of inputs) {
    const e = await tok.encode(text, null, { addSpecialTokens: false });
    plain.push(e.getIds());
  }
  const encodeSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cases = [];
  for (let i = 0; i < inputs.length; ++i) {
    if (bench) {
      cases.push({ ids: plain[i] });
      continue;
    }
    const special = (await tok.encode(inputs[i], null, { addSpecialTokens: true })).getIds();
    cases.push({
      ids: plain[i],
      ids_special: special,
      decoded: await tok.decode(plain[i], false),
      decoded_skip: await tok.decode(special, true),
    });
  }
  fs.writeFileSync(outputJson, JSON.stringify({ cases, load_seconds: loadSeconds,
                                                encode_seconds: encodeSeconds }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
