import Database from 'better-sqlite3'
const log: string[] = []
let on = false
const proto = Object.getPrototypeOf((new Database(':memory:')).prepare('SELECT 1'))
for (const m of ['run', 'get', 'all', 'iterate']) {
  const orig = proto[m]
  proto[m] = function (this: { source: string }, ...a: unknown[]) {
    if (on) log.push(`${m}: ${this.source.replace(/\s+/g, ' ').slice(0, 160)}`)
    return orig.apply(this, a)
  }
}
const { startTestServer } = await import('./test/support/server.js')
const s = await startTestServer({ logger: undefined })
const key = await s.createKey({ tier: 'pro' })
const post = (i: number) => fetch(`${s.baseUrl}/v1/agents`, { method: 'POST', headers: { authorization: `Bearer ${key.token}`, 'content-type': 'application/json', 'idempotency-key': `k-${i}` }, body: JSON.stringify({ name: 'bench', behavior: 'autonomous', capabilities: [] }) })
for (let i = 0; i < 3; i++) await post(i)
on = true
const r = await post(99)
on = false
console.log(r.status, await r.text())
console.log(log.join('\n'))
await s.close()
