/**
 * The private-target settings (issue 44): exact host:port pairs per purpose, nothing else; link-local and
 * metadata addresses cannot be listed; the all-or-nothing AGENTOPS_ALLOW_PRIVATE_WEBHOOKS stops the start with
 * what to set instead.
 */
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'

describe('AGENTOPS_*_PRIVATE_TARGETS', () => {
  it('lists nothing by default, for every purpose', () => {
    const { privateTargets } = loadConfig({})
    for (const targets of Object.values(privateTargets)) {
      expect(targets.allows('127.0.0.1', 8765)).toBe(false)
      expect(targets.allows('localhost', 80)).toBe(false)
    }
  })

  it('reads exact host:port pairs per purpose, normalised as URLs are', () => {
    const { privateTargets } = loadConfig({
      AGENTOPS_WEBHOOK_PRIVATE_TARGETS: ' 127.0.0.1:8765 , [0:0::1]:9000,Receiver.Internal:443',
      AGENTOPS_TOOL_PRIVATE_TARGETS: '10.0.0.7:8080',
    })
    expect(privateTargets.webhooks.allows('127.0.0.1', 8765)).toBe(true)
    expect(privateTargets.webhooks.allows('::1', 9000)).toBe(true)
    expect(privateTargets.webhooks.allows('receiver.internal', 443)).toBe(true)
    expect(privateTargets.webhooks.allows('127.0.0.1', 8766)).toBe(false)
    expect(privateTargets.webhooks.allows('10.0.0.7', 8080)).toBe(false)
    expect(privateTargets.tools.allows('10.0.0.7', 8080)).toBe(true)
    expect(privateTargets.tools.allows('127.0.0.1', 8765)).toBe(false)
    expect(privateTargets.destinations.allows('127.0.0.1', 8765)).toBe(false)
  })

  it.each([
    ['AGENTOPS_WEBHOOK_PRIVATE_TARGETS', '127.0.0.1', /host:port/],
    ['AGENTOPS_WEBHOOK_PRIVATE_TARGETS', '127.0.0.1:*', /host:port/],
    ['AGENTOPS_WEBHOOK_PRIVATE_TARGETS', 'http://127.0.0.1:80', /host:port/],
    ['AGENTOPS_WEBHOOK_PRIVATE_TARGETS', '127.0.0.1:0', /host:port/],
    ['AGENTOPS_WEBHOOK_PRIVATE_TARGETS', '127.0.0.1:70000', /host:port/],
    ['AGENTOPS_TOOL_PRIVATE_TARGETS', '169.254.169.254:80', /never allowed/],
    ['AGENTOPS_TOOL_PRIVATE_TARGETS', '[::ffff:169.254.169.254]:80', /never allowed/],
    ['AGENTOPS_DESTINATION_PRIVATE_TARGETS', '[fe80::1]:443', /never allowed/],
    ['AGENTOPS_DESTINATION_PRIVATE_TARGETS', '100.100.100.200:80', /never allowed/],
  ])('refuses %s=%s, naming the setting', (name, value, why) => {
    expect(() => loadConfig({ [name]: value })).toThrow(name)
    expect(() => loadConfig({ [name]: value })).toThrow(why)
  })

  it('stops the start when the replaced AGENTOPS_ALLOW_PRIVATE_WEBHOOKS is on, naming what to set', () => {
    for (const on of ['1', 'true', 'yes'])
      expect(() => loadConfig({ AGENTOPS_ALLOW_PRIVATE_WEBHOOKS: on })).toThrow(
        /AGENTOPS_WEBHOOK_PRIVATE_TARGETS/,
      )
    for (const off of ['0', 'false', 'off', ''])
      expect(
        loadConfig({ AGENTOPS_ALLOW_PRIVATE_WEBHOOKS: off }).privateTargets.tools.allows('127.0.0.1', 80),
      ).toBe(false)
  })
})
