/**
 * A fault-injecting HTTP proxy (node:http, 127.0.0.1) between the suite and a deployment. A mutant rewrites
 * requests on their way in, answers on their way out, and webhook deliveries on their way to the suite's receiver
 * (deliveries are addressed to `<proxy>/__hooks/...` and forwarded to the real receiver).
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export type Json = Record<string, unknown>

export interface ProxiedRequest {
  method: string
  /** Path with query string. */
  path: string
  headers: Record<string, string>
  body: string
}

export interface ProxiedResponse {
  status: number
  headers: Record<string, string>
  body: string
}

export interface MutantContext {
  tokens: { primary: string; secondWorkspace?: string; expired?: string }
  /** Sends a request to the deployment directly (for mutants that consult it). */
  upstream(req: ProxiedRequest): Promise<ProxiedResponse>
}

export interface Mutant {
  id: string
  description: string
  /** Check ids that must fail while this mutant is active. */
  targets: string[]
  /** Check id prefixes to run (default: the targets). */
  run?: string[]
  /** Rewrites a request before it reaches the deployment; returning a response answers it without forwarding. */
  request?(
    req: ProxiedRequest,
    ctx: MutantContext,
  ): Promise<ProxiedRequest | ProxiedResponse> | ProxiedRequest | ProxiedResponse
  /** Rewrites the deployment's answer. */
  response?(
    req: ProxiedRequest,
    res: ProxiedResponse,
    ctx: MutantContext,
  ): Promise<ProxiedResponse> | ProxiedResponse
  /** Rewrites a webhook delivery on its way to the receiver. */
  delivery?(req: ProxiedRequest): ProxiedRequest
}

export const HOOK_PREFIX = '/__hooks'

function flat(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(headers))
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v
  return out
}

const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host', 'upgrade'])

async function send(base: string, req: ProxiedRequest): Promise<ProxiedResponse> {
  const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !HOP.has(k)))
  const res = await fetch(`${base}${req.path}`, {
    method: req.method,
    headers,
    ...(req.body !== '' && req.method !== 'GET' && req.method !== 'HEAD' ? { body: req.body } : {}),
    redirect: 'manual',
    signal: AbortSignal.timeout(30_000),
  })
  const out: Record<string, string> = {}
  res.headers.forEach((v, k) => {
    if (!HOP.has(k) && k !== 'content-encoding') out[k] = v
  })
  return { status: res.status, headers: out, body: await res.text() }
}

export function isResponse(x: ProxiedRequest | ProxiedResponse): x is ProxiedResponse {
  return 'status' in x
}

export class MutantProxy {
  private server: Server | undefined
  mutant: Mutant | undefined
  port = 0

  constructor(
    private readonly target: string,
    private readonly receiverUrl: () => string,
    private readonly tokens: MutantContext['tokens'],
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  async listen(): Promise<void> {
    const ctx: MutantContext = { tokens: this.tokens, upstream: (req) => send(this.target, req) }
    this.server = createServer((inReq, outRes) => {
      const chunks: Buffer[] = []
      inReq.on('data', (c: Buffer) => chunks.push(c))
      inReq.on('end', async () => {
        let req: ProxiedRequest = {
          method: inReq.method ?? 'GET',
          path: inReq.url ?? '/',
          headers: flat(inReq.headers),
          body: Buffer.concat(chunks).toString('utf8'),
        }
        try {
          let res: ProxiedResponse
          if (req.path.startsWith(HOOK_PREFIX)) {
            if (this.mutant?.delivery) req = this.mutant.delivery(req)
            res = await send(this.receiverUrl(), { ...req, path: req.path.slice(HOOK_PREFIX.length) || '/' })
          } else {
            const rewritten = this.mutant?.request ? await this.mutant.request(req, ctx) : req
            if (isResponse(rewritten)) res = rewritten
            else {
              req = rewritten
              res = await send(this.target, req)
              if (this.mutant?.response) res = await this.mutant.response(req, res, ctx)
            }
          }
          outRes.writeHead(res.status, res.headers).end(res.body)
        } catch (err) {
          outRes.writeHead(502, { 'content-type': 'text/plain' }).end(`proxy: ${(err as Error).message}`)
        }
      })
    })
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', () => resolve()))
    this.port = (this.server.address() as AddressInfo).port
  }

  async close(): Promise<void> {
    const server = this.server
    if (!server) return
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** Parses a JSON body, applies `edit`, and re-serialises; non-JSON bodies pass unchanged. */
export function editJson(res: ProxiedResponse, edit: (body: Json) => Json | undefined): ProxiedResponse {
  if (!(res.headers['content-type'] ?? '').includes('json')) return res
  let body: Json
  try {
    body = JSON.parse(res.body) as Json
  } catch {
    return res
  }
  const next = edit(body)
  return next === undefined ? res : { ...res, body: JSON.stringify(next) }
}
