import { describe, expect, it } from 'vitest'
import {
  busySessions,
  competingSessionsWarning,
  type ProcessSample,
  parseAutogroup,
} from '../../bench/support/competing-sessions.js'

const proc = (
  pid: number,
  group: string,
  nice: number,
  ticks: number,
  command = `cmd-${pid}`,
): ProcessSample => ({
  pid,
  group: { name: group, nice },
  ticks,
  command,
})

describe('competing sessions (autogroup scheduling)', () => {
  it('reads /proc/<pid>/autogroup, and nothing else', () => {
    expect(parseAutogroup('/autogroup-48 nice 19\n')).toEqual({ name: '/autogroup-48', nice: 19 })
    expect(parseAutogroup('/autogroup-1 nice -5')).toEqual({ name: '/autogroup-1', nice: -5 })
    expect(parseAutogroup('')).toBeUndefined()
    expect(parseAutogroup('nice 0')).toBeUndefined()
  })

  it('names the other sessions that used CPU at a group nice below 19, busiest first, by their busiest process', () => {
    const before = [
      proc(10, '/autogroup-1', 0, 100),
      proc(20, '/autogroup-48', 0, 0),
      proc(21, '/autogroup-48', 0, 0),
      proc(30, '/autogroup-49', 19, 0),
      proc(40, '/autogroup-50', 0, 0),
      proc(50, '/autogroup-51', 0, 0),
    ]
    const after = [
      proc(10, '/autogroup-1', 0, 200), // our own session: left out
      proc(20, '/autogroup-48', 0, 30),
      proc(21, '/autogroup-48', 0, 60),
      proc(30, '/autogroup-49', 19, 100), // already niced as a group: idle time only
      proc(40, '/autogroup-50', 0, 2), // under the threshold
      proc(50, '/autogroup-51', 0, 95),
      proc(60, '/autogroup-48', 0, 5), // started between the samples: not counted
    ]
    const busy = busySessions(before, after, 100, '/autogroup-1')
    expect(busy).toEqual([
      { group: '/autogroup-51', nice: 0, share: 0.95, pid: 50, command: 'cmd-50' },
      { group: '/autogroup-48', nice: 0, share: 0.9, pid: 21, command: 'cmd-21' },
    ])
    const warning = competingSessionsWarning(busy)
    expect(warning).toContain('/autogroup-51 (nice 0) 95 % of a core, e.g. pid 50 cmd-50')
    expect(warning).toContain('for p in 50 21; do echo 19 > /proc/$p/autogroup; done')
    expect(competingSessionsWarning([])).toBeUndefined()
  })
})
