// Oracle for the GGUF tokenizer tests: llama.cpp's own tokenizer (npm node-llama-cpp 3.21.1 with
// its prebuilt linux-x64 binaries) loads a vocabulary-only GGUF and tokenizes every input of a
// JSON array, recognising special tokens written in the text and adding no BOS/EOS.
//
// usage: node llama_tokenize.mjs ORACLE_DIR MODEL_GGUF INPUTS_JSON OUTPUT_JSON
//   output: {"cases": [{"ids": [...]}], "bos": id|null, "eos": id|null}
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [oracleDir, gguf, inputsJson, outputJson] = process.argv.slice(2);
const entry = path.join(oracleDir, 'node_modules', 'node-llama-cpp', 'dist', 'index.js');
const { getLlama } = await import(pathToFileURL(entry).href);
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const model = await llama.loadModel({ modelPath: gguf, vocabOnly: true });
const inputs = JSON.parse(fs.readFileSync(inputsJson, 'utf8'));
const cases = inputs.map((text) => ({ ids: Array.from(model.tokenize(text, true)) }));
fs.writeFileSync(outputJson, JSON.stringify({ cases, bos: model.tokens.bos ?? null,
                                              eos: model.tokens.eos ?? null }));
await model.dispose();
await llama.dispose();
