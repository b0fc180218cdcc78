/**
 * A deployment to point the suite at, standing alone: the reference server behind the mutant proxy, playing one
 * dialect (a correct server of another team's, e.g. `declared-choices`) or one mutant (a broken one). Used as "your
 * own server" by conformance/README.md's walk-through and by the tests that run the CLI against broken deployments.
 *
 *   npx tsx conformance/mutants/serve.ts [--dialect ID | --mutant ID] [--port N] [--reference-port N]
 *
 * Prints one JSON line once it serves: {"baseUrl", "databaseUrl", "provision"}: `provision` is the command that
 * issues the suite's identities on this deployment (`agentops keys provision-conformance` on its store). Stops on
 * SIGTERM or SIGINT. `POST /__stand-in/mutant/<id>` (or `/__stand-in/dialect/<id>`, `/__stand-in/clean`) switches
 * what it plays, so one stand-in serves a test's several broken deployments in turn.
 */
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { REPO_ROOT, resolveConfig } from '../src/config.js'
import { freePort } from '../src/ports.js'
import { startReference } from '../src/reference.js'
import { createDialects, type Dialect } from './dialects.js'
import { createMutants } from './mutants.js'
import { type Mutant, MutantProxy } from './proxy.js'

const SWITCH = /^\/__stand-in\/(?:(mutant|dialect)\/([A-Za-z0-9._-]+)|clean)$/

/** A mutant that plays `initial` and hands every hook to whichever one a `POST /__stand-in/...` switched to. */
export function switchable(initial: Mutant | undefined): Mutant {
  let current = initial
  return {
    id: 'stand-in',
    description: 'whichever dialect or mutant was switched to last',
    targets: [],
    request(req, ctx) {
      const m = req.method === 'POST' ? SWITCH.exec(req.path) : null
      if (m) {
        try {
          current = m[1] ? standIn(m[1] as 'mutant' | 'dialect', m[2]!) : undefined
          return { status: 204, headers: {}, body: '' }
        } catch (err) {
          return { status: 404, headers: { 'content-type': 'text/plain' }, body: (err as Error).message }
        }
      }
      return current?.request ? current.request(req, ctx) : req
    },
    response: (req, res, ctx) => (current?.response ? current.response(req, res, ctx) : res),
    delivery: (req) => (current?.delivery ? current.delivery(req) : req),
    upgrade: (headers, ctx) => (current?.upgrade ? current.upgrade(headers, ctx) : headers),
    streamMessage: (message, connection) =>
      current?.streamMessage ? current.streamMessage(message, connection) : message,
    clientMessage: (message, connection) =>
      current?.clientMessage ? current.clientMessage(message, connection) : message,
    streamClosed: (connection) => current?.streamClosed?.(connection),
    upgradePath: (path) => (current?.upgradePath ? current.upgradePath(path) : path),
    keepsOpen: (code, reason) => current?.keepsOpen?.(code, reason) ?? false,
    get answersPings() {
      return current?.answersPings
    },
    get plainHandshakeRefusals() {
      return current?.plainHandshakeRefusals
    },
    get streamPoll() {
      return current?.streamPoll
    },
    get ssePoll() {
      return current?.ssePoll
    },
  }
}

/** The dialect or mutant named `id`. */
export function standIn(kind: 'dialect' | 'mutant', id: string): Mutant {
  return kind === 'dialect' ? dialectNamed(id) : named('mutant', createMutants(), id)
}

function dialectNamed(id: string): Dialect {
  return named('dialect', createDialects(resolveConfig([]).config.openapiPath), id)
}

function named<M extends Mutant>(kind: string, all: M[], id: string): M {
  const found = all.find((m) => m.id === id)
  if (!found) throw new Error(`no ${kind} "${id}"; one of: ${all.map((m) => m.id).join(', ')}`)
  return found
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      dialect: { type: 'string' },
      mutant: { type: 'string' },
      port: { type: 'string' },
      'reference-port': { type: 'string' },
    },
    strict: true,
  })
  const dialect = values.dialect ? dialectNamed(values.dialect) : undefined
  const mutant = dialect ?? (values.mutant ? standIn('mutant', values.mutant) : undefined)
  const port = Number(values.port ?? process.env.PORT ?? 0)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0..65535`)
  // The reference behind the proxy: any free port, or this one (a runner whose firewall opens only some).
  const referencePort = Number(values['reference-port'] ?? 0)
  if (!Number.isInteger(referencePort) || referencePort < 0 || referencePort > 65535)
    throw new Error(`--reference-port must be 0..65535`)
  // Deliveries reach the suite's receiver through this proxy: its address is the reference's one private target.
  const listenPort = port || (await freePort())
  const reference = await startReference((line) => process.stderr.write(`${line}\n`), undefined, {
    receiverTarget: `127.0.0.1:${listenPort}`,
    ...(referencePort ? { port: referencePort } : {}),
  })
  let proxy: MutantProxy | undefined
  const stop = async () => {
    await proxy?.close()
    await reference.stop()
    process.exit(0)
  }
  process.once('SIGTERM', () => void stop())
  process.once('SIGINT', () => void stop())
  proxy = new MutantProxy(reference.baseUrl, () => proxy?.relayedReceiver ?? '', reference.tokens, true)
  proxy.mutant = switchable(mutant)
  await proxy.listen(listenPort)
  const cli = join(REPO_ROOT, 'bin', 'agentops.mjs')
  // A dialect served under a gateway's path prefix is reached at the prefixed URL its users would give the suite.
  const urls = resolveConfig([]).config
  urls.baseUrl = proxy.url
  urls.streamUrl = proxy.url.replace(/^http/, 'ws')
  dialect?.configure?.(urls)
  process.stdout.write(
    `${JSON.stringify({
      baseUrl: urls.baseUrl,
      databaseUrl: reference.databaseUrl,
      provision: `node ${cli} keys provision-conformance --database-url ${reference.databaseUrl}`,
    })}\n`,
  )
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main().catch((err: unknown) => {
    process.stderr.write(`serve: ${(err as Error).message}\n`)
    process.exit(1)
  })
}
