import { isIP } from 'node:net'
import { hostOf, isNeverAllowedAddress } from './addresses.js'

/**
 * What the server calls out to, each with its own list of private targets: webhook deliveries, event
 * destinations (chat, paging, event bus) and the `http` tool provider. A receiver allowed for one is not allowed
 * for the others, so letting the conformance suite's webhook receiver in does not let a tool read internal URLs.
 */
export const OUTBOUND_PURPOSES = ['webhooks', 'destinations', 'tools'] as const
export type OutboundPurpose = (typeof OUTBOUND_PURPOSES)[number]

/** The setting that lists each purpose's private targets. */
export const PRIVATE_TARGETS_SETTING: Record<OutboundPurpose, string> = {
  webhooks: 'AGENTOPS_WEBHOOK_PRIVATE_TARGETS',
  destinations: 'AGENTOPS_DESTINATION_PRIVATE_TARGETS',
  tools: 'AGENTOPS_TOOL_PRIVATE_TARGETS',
}

/**
 * The private (loopback, RFC 1918, ...) hosts and ports one purpose may call anyway. Public addresses need no
 * listing; link-local and cloud metadata addresses are refused whatever this says.
 */
export interface PrivateTargets {
  /** Whether a URL's host (lower case, IPv6 without brackets) and port (the scheme's default filled in) is listed. */
  allows(host: string, port: number): boolean
}

/** No private target: the default for every purpose. */
export const NO_PRIVATE_TARGETS: PrivateTargets = { allows: () => false }

/** The port a URL connects to: its own, or its scheme's default. */
export function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port)
  return url.protocol === 'https:' ? 443 : 80
}

/** Whether `targets` lists the host and port `url` connects to. */
export function listedTarget(targets: PrivateTargets, url: URL): boolean {
  return targets.allows(hostOf(url).toLowerCase(), portOf(url))
}

const ENTRY = /^(\[[^\]]+\]|[^:[\]\s]+):(\d{1,5})$/

/**
 * One `host:port` of a private-target list, normalised as a URL would be (`[::1]:8080`, `127.0.0.1:8765`,
 * `receiver.internal:443`): host and port exactly, no wildcard, no scheme, no path.
 */
function parseEntry(raw: string, setting: string): string {
  const entry = raw.trim()
  const match = ENTRY.exec(entry)
  const port = Number(match?.[2])
  if (!match?.[1] || !Number.isInteger(port) || port < 1 || port > 65_535)
    throw new Error(`${setting}: "${entry}" is not a host:port pair (e.g. 127.0.0.1:8765 or [::1]:8765)`)
  let url: URL
  try {
    url = new URL(`http://${match[1]}:${port}/`)
  } catch {
    throw new Error(`${setting}: "${entry}" does not name a host`)
  }
  const host = hostOf(url).toLowerCase()
  if (isIP(host) !== 0 && isNeverAllowedAddress(host))
    throw new Error(
      `${setting}: "${entry}" is a link-local or cloud metadata address, which is never allowed`,
    )
  return `${host}|${port}`
}

/** The exact host:port pairs of a comma-separated setting (empty or unset: none). Throws on a malformed entry. */
export function parsePrivateTargets(value: string | undefined, setting: string): PrivateTargets {
  if (value === undefined || value.trim() === '') return NO_PRIVATE_TARGETS
  const listed = new Set(
    value
      .split(',')
      .filter((raw) => raw.trim() !== '')
      .map((raw) => parseEntry(raw, setting)),
  )
  return { allows: (host, port) => listed.has(`${host}|${port}`) }
}
