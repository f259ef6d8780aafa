// halo serve through the official openai npm client: whole and streamed chat
// and completions, usage counts, seed determinism (the same request twice,
// and the text `halo run --prompt` gives), a bounded load (8 clients at once
// give what they give one at a time), a client that aborts its stream, and a
// refused request surfacing as the client's BadRequestError.
// usage: node openai_client_test.mjs URL MODEL HALO_RUN_TEXT_FILE
import OpenAI from "openai";
import { readFileSync } from "node:fs";
import assert from "node:assert/strict";

const [url, model, runTextFile] = process.argv.slice(2);
const client = new OpenAI({ baseURL: url + "/v1", apiKey: "none", maxRetries: 0 });
const greedy = { temperature: 0 };

async function streamText(params, pick) {
	const chunks = [];
	for await (const c of await pick({ ...params, stream: true, stream_options: { include_usage: true } }))
		chunks.push(c);
	return chunks;
}

async function models() {
	const list = await client.models.list();
	assert.deepEqual(list.data.map((m) => m.id), [model]);
}

async function chat() {
	const params = { model, messages: [{ role: "user", content: "Say hi" }], max_tokens: 9, ...greedy };
	const whole = await client.chat.completions.create(params);
	assert.equal(whole.object, "chat.completion");
	assert.equal(whole.choices[0].message.role, "assistant");
	assert.equal(whole.usage.completion_tokens, 9);
	assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + 9);
	const chunks = await streamText(params, (p) => client.chat.completions.create(p));
	assert.equal(chunks[0].choices[0].delta.role, "assistant");
	const text = chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("");
	assert.equal(text, whole.choices[0].message.content);
	assert.deepEqual(chunks.at(-1).usage, whole.usage);
}

async function completions() {
	const params = { model, prompt: "The capital of France is", max_tokens: 7, ...greedy };
	const whole = await client.completions.create(params);
	assert.equal(whole.object, "text_completion");
	assert.equal(whole.choices[0].finish_reason, "length");
	assert.equal(whole.usage.completion_tokens, 7);
	const chunks = await streamText(params, (p) => client.completions.create(p));
	assert.equal(chunks.map((c) => c.choices[0]?.text ?? "").join(""), whole.choices[0].text);
	assert.deepEqual(chunks.at(-1).usage, whole.usage);
}

// Sampled with a seed: `halo run --prompt "Once upon" --n-predict 12
// --temp 0.8 --top-p 0.95 --seed 42` printed runTextFile.
async function seeded() {
	const params = { model, prompt: "Once upon", max_tokens: 12, temperature: 0.8, top_p: 0.95, seed: 42 };
	const a = await client.completions.create(params);
	const b = await client.completions.create(params);
	assert.equal(a.choices[0].text, b.choices[0].text);
	assert.equal(a.choices[0].text, readFileSync(runTextFile, "utf8"));
	const c = await client.completions.create({ ...params, seed: 43 });
	assert.notEqual(c.choices[0].text, a.choices[0].text);
}

// 8 clients at once against --parallel 2 --queue 16: every one answered,
// each with what it gets alone.
async function load() {
	const prompts = Array.from({ length: 8 }, (_, i) => `Count to ${i + 1}:`);
	const ask = (prompt) => client.completions.create({ model, prompt, max_tokens: 10, ...greedy });
	const together = await Promise.all(prompts.map(ask));
	for (const [i, p] of prompts.entries())
		assert.equal(together[i].choices[0].text, (await ask(p)).choices[0].text, p);
}

// A client that aborts its stream after the first piece of text; the
// server goes on serving (the shell checks its log for the cancel).
async function disconnect() {
	const ac = new AbortController();
	const stream = await client.completions.create(
		{ model, prompt: "Tell me a story", max_tokens: 1900, ...greedy, stream: true },
		{ signal: ac.signal });
	let aborted = false;
	try {
		for await (const c of stream)
			if (c.choices[0]?.text) {
				ac.abort();
				aborted = true;
				break;
			}
	} catch (e) {
		if (!(e instanceof OpenAI.APIUserAbortError))
			throw e;
	}
	assert.ok(aborted, "the stream ended before its first text");
	const after = await client.completions.create({ model, prompt: "Hi", max_tokens: 2, ...greedy });
	assert.equal(after.usage.completion_tokens, 2);
}

async function refused() {
	await assert.rejects(client.chat.completions.create({ model, messages: [{ role: "user", content: "x" }], n: 2 }),
		(e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "n");
}

for (const [name, t] of Object.entries({ models, chat, completions, seeded, load, disconnect, refused })) {
	await t();
	console.log(`openai client: ${name} ok`);
}
