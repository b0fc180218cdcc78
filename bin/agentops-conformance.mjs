#!/usr/bin/env node
// Runs the conformance suite's TypeScript through tsx, resolved from this package, wherever it is started.
import { register } from 'tsx/esm/api'

register()
const { main } = await import('../conformance/src/cli.ts')
process.exitCode = await main(process.argv.slice(2))
