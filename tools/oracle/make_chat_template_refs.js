#!/usr/bin/env node
// Reference renders for runtime/chat_template.c, from @huggingface/jinja (the
// JavaScript Jinja that the Hugging Face Hub renders chat templates with;
// trim_blocks and lstrip_blocks on, as transformers sets them). Writes
// tests/fixtures/chat_template/<template>.refs.json: every template in that
// folder over the conversations below, with add_generation_prompt false/true
// and enable_thinking undefined/true/false. A render the oracle refuses
// (e.g. a template that needs tool arguments as a mapping) is left out and
// listed on stderr. docs/chat_template.md says where @huggingface/jinja and
// transformers differ and why no conversation here depends on it.
//
//   mkdir -p /tmp/jinjaoracle && cd /tmp/jinjaoracle && npm install @huggingface/jinja
//   NODE_PATH=/tmp/jinjaoracle/node_modules node tools/oracle/make_chat_template_refs.js
'use strict';
const fs = require('fs');
const path = require('path');
const { Template } = require('@huggingface/jinja');

const root = path.resolve(__dirname, '../..');
const dir = path.join(root, 'tests/fixtures/chat_template');

const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city. Use <city> names, e.g. "Zürich" & "東京".',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1, maximum: 7 } },
      required: ['city'],
    },
  },
};
const calc = { type: 'function', function: { name: 'calc', description: 'Arithmetic.', parameters: { type: 'object', properties: { expr: { type: 'string' } } } } };

const call = (name, args) => ({ type: 'function', function: { name, arguments: args } });

// Tool arguments come as a mapping (Qwen3 dumps it, Qwen3.5 walks it) or as
// a JSON string (DeepSeek concatenates it; Qwen3 writes it as is).
const conversations = {
  system_user: { messages: [{ role: 'system', content: 'You are a helpful assistant.' }, { role: 'user', content: 'Hello!' }] },
  user_only: { messages: [{ role: 'user', content: 'What is 2+2?' }] },
  multi_turn: {
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello! How can I help?' },
      { role: 'user', content: 'Tell me a joke.' },
      { role: 'assistant', content: 'Why did the chicken cross the road?' },
      { role: 'user', content: 'Why?' },
    ],
  },
  reasoning_content: {
    messages: [
      { role: 'user', content: 'Is 17 prime?' },
      { role: 'assistant', content: 'Yes.', reasoning_content: '17 has no divisors but 1 and itself.' },
      { role: 'user', content: 'And 21?' },
      { role: 'assistant', content: 'No, 21 = 3 × 7.', reasoning_content: '\nCheck 3: 3*7=21.\n' },
    ],
  },
  think_in_content: {
    messages: [
      { role: 'user', content: 'Say hi' },
      { role: 'assistant', content: '<think>\nThe user wants a greeting.\n</think>\n\nHi there!' },
      { role: 'user', content: 'Again' },
      { role: 'assistant', content: '<think>\nSame again.\n</think>\n\nHi again!' },
    ],
  },
  unicode: {
    messages: [
      { role: 'system', content: 'Réponds en français. 日本語も可。' },
      { role: 'user', content: 'Ça va? 🙂👍🏽 Привет — 你好 ' },
      { role: 'assistant', content: 'Très bien! 🎉' },
      { role: 'user', content: '\ttabs and  spaces\n\nand newlines\n' },
    ],
  },
  empty_content: {
    messages: [
      { role: 'user', content: '' },
      { role: 'assistant', content: '' },
      { role: 'user', content: 'now something' },
    ],
  },
  tools_mapping_args: {
    tools: [weather, calc],
    messages: [
      { role: 'system', content: 'You can call tools.' },
      { role: 'user', content: 'Weather in Zürich and Paris?' },
      {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [call('get_weather', { city: 'Zürich', unit: 'celsius' }), call('get_weather', { city: 'Paris', extra: { a: [1, 2.5], b: 'x' } })],
      },
      { role: 'tool', content: '{"temp": 21}' },
      { role: 'tool', content: '{"temp": 18}' },
      { role: 'assistant', content: 'Zürich 21°C, Paris 18°C.' },
      { role: 'user', content: 'Thanks' },
    ],
  },
  tools_string_args: {
    tools: [weather],
    messages: [
      { role: 'user', content: 'Weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: [call('get_weather', '{"city": "Oslo"}')] },
      { role: 'tool', content: 'cloudy, 4°C' },
      { role: 'assistant', content: 'Cloudy and 4°C in Oslo.' },
    ],
  },
  tool_call_last: {
    tools: [calc],
    messages: [
      { role: 'user', content: 'Compute 6*7' },
      { role: 'assistant', content: '', tool_calls: [call('calc', '{"expr": "6*7"}')] },
      { role: 'tool', content: '42' },
    ],
  },
};

// Renders where @huggingface/jinja is laxer than Jinja2, so its text is not
// what transformers gives: DeepSeek concatenates the arguments with `+`,
// which Python refuses for a mapping (TypeError), JavaScript stringifies.
const transformersRefuses = { 'deepseek-v3.1.jinja': ['tools_mapping_args'] };

const bos = { 'deepseek-v3.1.jinja': '<｜begin▁of▁sentence｜>' };

function contexts(file) {
  const out = [];
  for (const [name, conv] of Object.entries(conversations)) {
    if ((transformersRefuses[file] || []).includes(name)) continue;
    for (const gen of [false, true]) {
      for (const think of [undefined, true, false]) {
        const ctx = { messages: conv.messages, tools: conv.tools || null, documents: null, add_generation_prompt: gen };
        if (think !== undefined) ctx.enable_thinking = think;
        if (bos[file]) ctx.bos_token = bos[file];
        else ctx.eos_token = '<|im_end|>';
        out.push({ name: `${name}/gen=${gen}/thinking=${think === undefined ? 'undef' : think}`, context: ctx });
      }
    }
  }
  return out;
}

for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.jinja')).sort()) {
  const tpl = new Template(fs.readFileSync(path.join(dir, file), 'utf8'));
  const cases = [];
  for (const c of contexts(file)) {
    try {
      cases.push({ name: c.name, context: c.context, text: tpl.render(c.context) });
    } catch (e) {
      process.stderr.write(`${file}: ${c.name}: left out: ${e.message}\n`);
    }
  }
  const refs = { template: file, cases };
  fs.writeFileSync(path.join(dir, file.replace(/\.jinja$/, '.refs.json')), JSON.stringify(refs, null, 1) + '\n');
  process.stdout.write(`${file}: ${cases.length} renders\n`);
}
