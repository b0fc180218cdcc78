import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listenPort } from '../../test/support/ports.js'
import { WebhookReceiver } from '../src/receiver.js'

const receiver = new WebhookReceiver()

beforeAll(async () => {
  await receiver.listen('127.0.0.1', await listenPort())
})
afterAll(() => receiver.close())

const deliver = (n: number) =>
  fetch(`http://127.0.0.1:${receiver.port}/hooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ n }),
  })

describe('WebhookReceiver.waitFor', () => {
  it('finds a delivery that came before the wait, and one that comes during it', async () => {
    await deliver(1)
    expect((await receiver.waitFor((d) => d.body?.n === 1, 1000))?.body).toEqual({ n: 1 })
    const later = receiver.waitFor((d) => d.body?.n === 2, 5000)
    await deliver(2)
    expect((await later)?.body).toEqual({ n: 2 })
    expect(await receiver.waitFor((d) => d.body?.n === 3, 50)).toBeUndefined()
  })

  it('looks at each delivery once per wait, however many arrive while it waits', async () => {
    for (let i = 0; i < 200; i++) await deliver(100 + i)
    let looks = 0
    const waiting = receiver.waitFor((d) => {
      looks++
      return d.body?.n === 'last'
    }, 5000)
    const before = receiver.deliveries.length
    for (let i = 0; i < 20; i++) await deliver(1000 + i)
    await fetch(`http://127.0.0.1:${receiver.port}/hooks`, { method: 'POST', body: '{"n":"last"}' })
    expect((await waiting)?.body).toEqual({ n: 'last' })
    // Every delivery once: those there before the wait, the 20 that woke it, and the one it waited for.
    expect(looks).toBe(before + 21)
  })
})

describe('WebhookReceiver.answerWith', () => {
  it('hangs up on a request a hangUp rule matches, after recording it; other paths are answered', async () => {
    receiver.answerWith((path) => path === '/dropped', { status: 0, body: '', hangUp: true })
    const dropped = fetch(`http://127.0.0.1:${receiver.port}/dropped`, {
      method: 'POST',
      body: '{"n":"dropped"}',
    })
    await expect(dropped).rejects.toThrow()
    expect((await receiver.waitFor((d) => d.body?.n === 'dropped', 1000))?.path).toBe('/dropped')
    expect((await deliver(4)).status).toBe(200)
  })
})

describe('WebhookReceiver.forgetEarlierRuns', () => {
  it('keeps only what comes after it: earlier deliveries and rules are gone, new ones work', async () => {
    receiver.failNext((body) => body?.n === 'refused', 5)
    receiver.answerWith((path) => path === '/teapot', { status: 418, body: '{}' })
    await deliver(7)
    expect(receiver.deliveries.length).toBeGreaterThan(0)
    receiver.forgetEarlierRuns()
    expect(receiver.deliveries).toEqual([])
    expect(await receiver.waitFor((d) => d.body?.n === 7, 50)).toBeUndefined()
    // The earlier run's rules answer nothing any more: both requests get the plain 200.
    const refused = await fetch(`http://127.0.0.1:${receiver.port}/hooks`, {
      method: 'POST',
      body: '{"n":"refused"}',
    })
    expect(refused.status).toBe(200)
    expect(
      (await fetch(`http://127.0.0.1:${receiver.port}/teapot`, { method: 'POST', body: '{}' })).status,
    ).toBe(200)
    expect(receiver.deliveries.map((d) => d.status)).toEqual([200, 200])
    // A rule set after it applies.
    receiver.failNext((body) => body?.n === 'refused', 1)
    expect(
      (await fetch(`http://127.0.0.1:${receiver.port}/hooks`, { method: 'POST', body: '{"n":"refused"}' }))
        .status,
    ).toBe(500)
  })
})
