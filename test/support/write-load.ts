/**
 * Writes to a server until killed, from its own process (so a test that blocks its own event loop does not slow
 * the load): 8 clients alternating run creations (the scheduler drains them) and 50-record ingest batches.
 * Arguments: the server's URL and a token. Prints "loading" once the first writes were answered.
 */
const [url = '', token = ''] = process.argv.slice(2)
const post = async (path: string, body: unknown) => {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  return (await res.json()) as Record<string, unknown>
}
const agent = await post('/v1/agents', { name: 'busy', behavior: 'autonomous' })
let answered = 0
const loop = async (n: number) => {
  for (let i = 0; ; i++) {
    if (i % 2 === 0) await post(`/v1/agents/${String(agent.agent_id)}/runs`, { inputs: {} })
    else {
      const records = Array.from({ length: 50 }, (_, j) => ({
        id: `r${n}-${i}-${j}`,
        ts: '2026-11-24T12:00:00Z',
        source: 'load',
        policy_class: 'internal',
        body: { j },
      }))
      await post(`/v1/grid/connectors/c${n}/ingest`, { records })
    }
    if (++answered === 100) process.stdout.write('loading\n')
  }
}
await Promise.all(Array.from({ length: 8 }, (_, n) => loop(n)))
