// A Workflow Streams client written against @temporalio/workflow-streams
// and @temporalio/client (the TypeScript SDK), run by the Go tests of
// package streams against a stream hosted by a Go workflow.
//
//   node stream.js subscribe ADDRESS WORKFLOW_ID FROM_OFFSET TOPICS MAX
//       prints each item as a JSON line {"topic", "offset", "encoding",
//       "value"} (value decoded by the default payload converter); TOPICS is
//       comma-separated, "" for all; stops after MAX items, or with 0 when
//       the workflow closes.
//   node stream.js publish ADDRESS WORKFLOW_ID TOPIC JSON...
//       publishes each JSON value to TOPIC in one batch and flushes.
//   node stream.js offset ADDRESS WORKFLOW_ID
//       prints the offset query's answer.
//   node stream.js encode JSON...
//       prints the wire form (base64 of the serialized Payload) of each
//       JSON value, and of the bytes 0, 1, 2, as the package encodes items.
//   node stream.js seal JSON...
//       prints base64 of the serialized Payload that agentrun's codec
//       (codec.js) makes of each JSON value with the environment's keys.
//   node stream.js open BASE64...
//       decodes each such serialized Payload with the codec, printing a JSON
//       line {"encoding", "value"} each, or fails naming the key id.
//
// With AGENTRUN_CODEC_KEYS (or AGENTRUN_CODEC_KEY_FILE) set, as for
// agentrun's Go programs, the client's data converter runs agentrun's codec
// (codec.js), so it reads and writes the runs of workers that encrypt their
// payloads. Without keys it reads plain runs, and fails on an encrypted one
// with an error naming the key id it would need.
'use strict';

const { Connection, Client } = require('@temporalio/client');
const { defaultPayloadConverter } = require('@temporalio/common');
const { WorkflowStreamClient } = require('@temporalio/workflow-streams/client');
const { encodePayloadWire } = require('@temporalio/workflow-streams/workflow');
const { temporal } = require('@temporalio/proto');
const { codecFromEnv } = require('./codec');

const ProtoPayload = temporal.api.common.v1.Payload;

async function main() {
  const [mode, address, workflowId, ...rest] = process.argv.slice(2);
  if (mode === 'encode') {
    const values = [address, workflowId, ...rest].filter((v) => v !== undefined).map((v) => JSON.parse(v));
    values.push(new Uint8Array([0, 1, 2]));
    for (const v of values) process.stdout.write(encodePayloadWire(defaultPayloadConverter.toPayload(v)) + '\n');
    return;
  }
  const codec = codecFromEnv(process.env);
  if (mode === 'seal' || mode === 'open') {
    const args = [address, workflowId, ...rest].filter((v) => v !== undefined);
    for (const a of args) {
      if (mode === 'seal') {
        const [p] = await codec.encode([defaultPayloadConverter.toPayload(JSON.parse(a))]);
        process.stdout.write(Buffer.from(ProtoPayload.encode(p).finish()).toString('base64') + '\n');
      } else {
        const [p] = await codec.decode([ProtoPayload.decode(Buffer.from(a, 'base64'))]);
        const encoding = new TextDecoder().decode(p.metadata?.encoding);
        process.stdout.write(JSON.stringify({ encoding, value: defaultPayloadConverter.fromPayload(p) }) + '\n');
      }
    }
    return;
  }
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection, namespace: 'default', dataConverter: { payloadCodecs: [codec] } });
    const stream = WorkflowStreamClient.create(client, workflowId, { batchInterval: '100 milliseconds' });
    switch (mode) {
      case 'subscribe': {
        const [from, topics, max] = rest;
        const filter = topics ? topics.split(',') : [];
        let n = 0;
        for await (const item of stream.subscribe(filter, Number(from), { pollCooldown: '20 milliseconds' })) {
          const encoding = new TextDecoder().decode(item.data.metadata.encoding);
          const value = defaultPayloadConverter.fromPayload(item.data);
          process.stdout.write(JSON.stringify({ topic: item.topic, offset: item.offset, encoding, value }) + '\n');
          if (Number(max) > 0 && ++n >= Number(max)) break;
        }
        break;
      }
      case 'publish': {
        const [topic, ...values] = rest;
        const handle = stream.topic(topic);
        for (const v of values) handle.publish(JSON.parse(v));
        await stream.flush();
        await stream[Symbol.asyncDispose]();
        break;
      }
      case 'offset':
        process.stdout.write(JSON.stringify(await stream.getOffset()) + '\n');
        break;
      default:
        throw new Error(`unknown mode ${mode}`);
    }
  } finally {
    await connection.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
