// The client scenario with kafkajs: create a topic, produce with acks=all from an
// idempotent producer, consume in a group of three that commits after every batch while one
// member leaves half-way, then list and describe the group and the topic. Prints one JSON
// object on stdout; the test decides what is right.
//
// Usage: node scenario.js BOOTSTRAP TOPIC N (the group is TOPIC-group)
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const PARTITIONS = 3
const DEADLINE_MS = 90000

async function main () {
  const [bootstrap, topic, nText] = process.argv.slice(2)
  const n = Number.parseInt(nText, 10)
  if (!bootstrap || !topic || !(n >= 2)) {
    console.error('usage: node scenario.js BOOTSTRAP TOPIC N')
    process.exit(2)
  }
  const group = `${topic}-group`
  const started = Date.now()
  const summary = {
    client: 'kafkajs',
    version: require('kafkajs/package.json').version,
    protocol: 'classic',
    topic,
    group,
    produced: [],
    aborted: [],
    consumed: [],
    assignments: 0,
    group_description: {},
    committed: {},
    topics: {},
    errors: [],
    timings_ms: {}
  }
  const mark = (what) => { summary.timings_ms[what] = Date.now() - started }
  const assignment = new Map() // member index -> partitions
  const kafka = new Kafka({
    clientId: 'kafkajs-scenario',
    brokers: bootstrap.split(','),
    logLevel: logLevel.NOTHING
  })

  const shared = (members) => {
    const all = [...assignment.values()].flat().sort()
    return assignment.size === members &&
      [...assignment.values()].every((ps) => ps.length > 0) &&
      JSON.stringify(all) === JSON.stringify([0, 1, 2])
  }
  const wait = async (what, cond) => {
    const end = Date.now() + DEADLINE_MS
    while (!cond()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  const member = async (index) => {
    const consumer = kafka.consumer({
      groupId: group,
      sessionTimeout: 10000,
      heartbeatInterval: 500,
      maxWaitTimeInMs: 100
    })
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      assignment.set(index, e.payload.memberAssignment[topic] || [])
      summary.assignments++
    })
    await consumer.connect()
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (batch.messages.length === 0) return
        for (const m of batch.messages) {
          summary.consumed.push([index, batch.partition, Number(m.offset), m.key.toString()])
        }
        const next = Number(batch.lastOffset()) + 1
        await consumer.commitOffsets([{ topic, partition: batch.partition, offset: String(next) }])
      }
    })
    return async () => {
      await consumer.disconnect() // leaves the group
      assignment.delete(index)
    }
  }

  const admin = kafka.admin()
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  const stops = []
  try {
    await admin.connect()
    await admin.createTopics({
      topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 3 }],
      waitForLeaders: true
    })
    mark('topic_created')
    await producer.connect()
    for (let i = 0; i < 3; i++) stops.push(await member(i))
    await wait('three members sharing the partitions', () => shared(3))
    mark('group_of_three')
    // One message a send: kafkajs reports one base offset per partition and call.
    const produce = async (from, to) => {
      for (let i = from; i < to; i++) {
        const key = `key-${i}`
        const [md] = await producer.send({ topic, acks: -1, messages: [{ key, value: `value-${i}` }] })
        summary.produced.push([md.partition, Number(md.baseOffset), key])
      }
    }
    const half = Math.floor(n / 2)
    await produce(0, half)
    mark('first_half_produced')
    await wait('the first half consumed', () => summary.consumed.length >= half)
    await stops[0]()
    stops[0] = null
    await wait('two members sharing the partitions', () => shared(2))
    mark('rebalanced_to_two')
    await produce(half, n)
    mark('second_half_produced')
    await wait('every message consumed', () => summary.consumed.length >= n)
    mark('all_consumed')
    await new Promise((resolve) => setTimeout(resolve, 500)) // a duplicate would arrive now

    const listed = await admin.listGroups()
    const described = (await admin.describeGroups([group])).groups[0]
    summary.group_description = {
      listed: listed.groups.map((g) => g.groupId),
      state: described.state,
      type: described.protocolType,
      members: described.members.length
    }
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] })
    summary.topics = {
      listed: await admin.listTopics(),
      partitions: metadata.topics[0].partitions.map((p) => ({
        partition: p.partitionId, leader: p.leader, replicas: p.replicas.length, isr: p.isr.length
      }))
    }
    mark('group_described')
    for (let i = 0; i < stops.length; i++) {
      if (stops[i]) await stops[i]()
      stops[i] = null
    }
    for (const t of await admin.fetchOffsets({ groupId: group, topics: [topic] })) {
      for (const p of t.partitions) summary.committed[String(p.partition)] = Number(p.offset)
    }
  } catch (e) {
    summary.errors.push(String(e && e.stack ? e.stack : e))
  } finally {
    for (const stop of stops) {
      if (stop) await stop().catch((e) => summary.errors.push(String(e)))
    }
    await producer.disconnect().catch(() => {})
    await admin.disconnect().catch(() => {})
  }
  // Exit only once the whole line is out: a pipe takes 64 KiB at a time.
  await new Promise((resolve) => process.stdout.write(JSON.stringify(summary) + '\n', resolve))
}

main().then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
