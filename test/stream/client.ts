/** A small WebSocket test client: collects messages and waits for the ones a test expects, with timeouts. */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import WebSocket from 'ws'
import { parse } from 'yaml'

// Every server message a test receives is checked against the contract's StreamServerMessage schema.
const contract = parse(readFileSync(join(import.meta.dirname, '../../openapi/agent-operations.yaml'), 'utf8'))
const ajv = new Ajv2020({ strict: false, allErrors: true })
addFormats.default(ajv)
ajv.addSchema({ ...contract, $id: 'contract' })
const validateServerMessage = ajv.compile({ $ref: 'contract#/components/schemas/StreamServerMessage' })
const DATA_TYPES = new Set(['record', 'event'])

/** Messages that broke the contract, across every client of the test file (assert it stays empty). */
export const contractViolations: string[] = []

function checkContract(message: Record<string, unknown>): void {
  if (!validateServerMessage(message)) {
    contractViolations.push(
      `${JSON.stringify(message).slice(0, 300)}: ${ajv.errorsText(validateServerMessage.errors)}`,
    )
  }
  if (
    DATA_TYPES.has(message.type as string) &&
    (typeof message.topic !== 'string' || !Number.isInteger(message.seq))
  ) {
    contractViolations.push(`data message without topic and seq: ${JSON.stringify(message).slice(0, 300)}`)
  }
}

export interface StreamMessage {
  type: string
  topic?: string
  seq?: number
  // biome-ignore lint/suspicious/noExplicitAny: tests read message bodies freely
  [key: string]: any
}

export interface TestClient {
  ws: WebSocket
  messages: StreamMessage[]
  send(message: unknown): void
  /** Resolves with the first collected message (from `fromIndex`) that matches; rejects after `timeoutMs`. */
  waitFor(match: (m: StreamMessage) => boolean, timeoutMs?: number): Promise<StreamMessage>
  /** Waits until `count` messages match, returns them in arrival order. */
  collect(match: (m: StreamMessage) => boolean, count: number, timeoutMs?: number): Promise<StreamMessage[]>
  closed: Promise<{ code: number; reason: string }>
  close(): Promise<void>
}

export function streamUrl(baseUrl: string, query = ''): string {
  return `${baseUrl.replace(/^http/, 'ws')}/v1/stream${query}`
}

export async function openClient(
  baseUrl: string,
  token: string | undefined,
  options: { viaQuery?: boolean } = {},
): Promise<TestClient> {
  const query = options.viaQuery && token ? `?access_token=${encodeURIComponent(token)}` : ''
  const headers: Record<string, string> =
    token && !options.viaQuery ? { authorization: `Bearer ${token}` } : {}
  const ws = new WebSocket(streamUrl(baseUrl, query), { headers })
  const messages: StreamMessage[] = []
  const waiters = new Set<() => void>()
  ws.on('message', (data) => {
    const message = JSON.parse(data.toString()) as StreamMessage
    checkContract(message)
    messages.push(message)
    for (const w of [...waiters]) w()
  })
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => {
      resolve({ code, reason: reason.toString() })
      for (const w of [...waiters]) w()
    }),
  )
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
    ws.once('unexpected-response', (_req, res) => reject(new Error(`unexpected response ${res.statusCode}`)))
  })

  function collect(match: (m: StreamMessage) => boolean, count: number, timeoutMs = 5000) {
    return new Promise<StreamMessage[]>((resolve, reject) => {
      const check = () => {
        const found = messages.filter(match)
        if (found.length >= count) {
          waiters.delete(check)
          clearTimeout(timer)
          resolve(found.slice(0, count))
        }
      }
      const timer = setTimeout(() => {
        waiters.delete(check)
        reject(
          new Error(
            `timed out waiting for ${count} messages, have ${messages.filter(match).length}: ${JSON.stringify(messages.slice(-5)).slice(0, 800)}`,
          ),
        )
      }, timeoutMs)
      waiters.add(check)
      check()
    })
  }

  return {
    ws,
    messages,
    send: (m) => ws.send(JSON.stringify(m)),
    waitFor: async (match, timeoutMs) => (await collect(match, 1, timeoutMs))[0] as StreamMessage,
    collect,
    closed,
    async close() {
      if (ws.readyState === WebSocket.CLOSED) return
      ws.close()
      await closed
    },
  }
}

/** The HTTP answer to an upgrade the server refused. */
export function refusedUpgrade(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers })
    ws.once('open', () => {
      ws.close()
      reject(new Error('the upgrade was accepted'))
    })
    ws.once('unexpected-response', (_req, res) => {
      let body = ''
      res.on('data', (chunk: Buffer) => {
        body += chunk.toString()
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
    ws.once('error', () => {})
  })
}
