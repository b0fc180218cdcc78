/**
 * The one plain sentence `agentops serve` writes on stderr when it cannot start (besides its fatal log line): what
 * failed, which setting it comes from, and what to do about it.
 */
import type { Config } from '../config.js'
import { StoreUnreachable } from '../store/open.js'

type Where = Pick<Config, 'port' | 'host'> & { metricsPort?: number | undefined }

export function startFailureSentence(err: unknown, config: Partial<Where>): string {
  const e = err as NodeJS.ErrnoException & { port?: number; address?: string }
  const message = (e?.message ?? String(err)).split('\n')[0] ?? ''
  if (err instanceof StoreUnreachable) {
    const fix =
      err.kind === 'postgres'
        ? 'check that PostgreSQL runs there and accepts this user, or give another URL'
        : 'check that the path is writable, or give another URL'
    return `agentops serve could not start: ${message}. The store is set by --database-url or AGENTOPS_DATABASE_URL; ${fix}.`
  }
  if (/database URL must be/.test(message))
    return `agentops serve could not start: ${message}. Fix --database-url or AGENTOPS_DATABASE_URL.`
  if (e?.code === 'EADDRINUSE') {
    const port = e.port ?? config.port
    const which =
      port !== undefined && port === config.metricsPort ? 'AGENTOPS_METRICS_PORT' : '--port or PORT'
    return `agentops serve could not start: port ${port} on ${e.address ?? config.host} is already in use. Stop what listens there or choose another port with ${which}.`
  }
  if (e?.code === 'EADDRNOTAVAIL' || e?.code === 'EACCES')
    return `agentops serve could not start: cannot listen on ${e.address ?? config.host}:${e.port ?? config.port} (${e.code}). Choose an address and port this machine may bind with --host/HOST and --port/PORT.`
  return `agentops serve could not start: ${message}. The log line above has the details; fix the setting it names and start again.`
}
