/**
 * The operating settings read from the environment (README, Configuration): metrics, the log and shutdown. Each
 * is read as documented, its default holds when unset, and a value it cannot use stops the start with its name.
 */
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'

describe('the operating settings from the environment', () => {
  it('has the documented defaults when nothing is set', () => {
    const config = loadConfig({})
    expect(config.metrics).toBe(true)
    expect(config.metricsToken).toBeUndefined()
    expect(config.metricsPort).toBeUndefined()
    expect(config.logLevel).toBe('info')
    expect(config.logPretty).toBeUndefined()
    expect(config.shutdownDrainMs).toBe(0)
    expect(config.shutdownGraceMs).toBe(10_000)
    expect(config.runPollMs).toBe(250)
    expect(config.tracePollMs).toBe(1000)
    expect(config.streamFallbackPollMs).toBe(2000)
  })

  it('reads each as documented', () => {
    const config = loadConfig({
      AGENTOPS_METRICS: 'off',
      AGENTOPS_METRICS_TOKEN: 'scrape-me',
      AGENTOPS_METRICS_PORT: '9464',
      AGENTOPS_LOG_LEVEL: 'WARN',
      AGENTOPS_LOG_PRETTY: 'on',
      AGENTOPS_SHUTDOWN_DRAIN_MS: '5000',
      AGENTOPS_SHUTDOWN_GRACE_MS: '2500',
      AGENTOPS_RUN_POLL_MS: '1000',
      AGENTOPS_TRACE_POLL_MS: '3000',
    })
    expect(config).toMatchObject({
      metrics: false,
      metricsToken: 'scrape-me',
      metricsPort: 9464,
      logLevel: 'warn',
      logPretty: true,
      shutdownDrainMs: 5000,
      shutdownGraceMs: 2500,
      runPollMs: 1000,
      tracePollMs: 3000,
    })
    expect(loadConfig({ AGENTOPS_LOG_PRETTY: 'off' }).logPretty).toBe(false)
  })

  it.each([
    ['AGENTOPS_METRICS', 'sometimes'],
    ['AGENTOPS_METRICS_PORT', '-1'],
    ['AGENTOPS_LOG_LEVEL', 'verbose'],
    ['AGENTOPS_LOG_PRETTY', 'colour'],
    ['AGENTOPS_SHUTDOWN_DRAIN_MS', '1.5'],
    ['AGENTOPS_SHUTDOWN_GRACE_MS', 'soon'],
  ])('refuses %s=%s, naming the setting', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(name)
  })
})
