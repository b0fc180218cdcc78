// `npm run conformance:bundle`: the suite as one self-contained file for Node >= 20: bundled JavaScript with its
// dependencies and the contract inside, nothing to install. Copy it anywhere and run
//   node agentops-conformance.mjs --base-url URL --config conformance.json
// Usage: node conformance/scripts/bundle.mjs [--out FILE]   (default conformance/bundle/agentops-conformance.mjs)
import { readFileSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { build } from 'esbuild'

const root = join(import.meta.dirname, '..')
const { values } = parseArgs({ options: { out: { type: 'string' } }, strict: true })
const out = resolve(values.out ?? join(root, 'bundle', 'agentops-conformance.mjs'))
const contract = readFileSync(join(root, '..', 'openapi', 'agent-operations.yaml'), 'utf8')
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))

/** Replaces src/embedded.ts with the contract's text, so the bundle needs no file beside it. */
const embedContract = {
  name: 'embed-contract',
  setup(b) {
    b.onLoad({ filter: /[\\/]src[\\/]embedded\.ts$/ }, () => ({
      contents: `export const EMBEDDED_CONTRACT = ${JSON.stringify(contract)}\nexport const EMBEDDED_VERSION = ${JSON.stringify(version)}\n`,
      loader: 'ts',
    }))
  },
}

const started = performance.now()
await build({
  entryPoints: [join(root, 'src', 'cli.ts')],
  outfile: out,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // ws loads these optional native accelerators in a try/catch; without them it uses its JavaScript code.
  external: ['bufferutil', 'utf-8-validate'],
  // The CommonJS dependencies (ws, ajv) call require() for Node's own modules.
  banner: {
    js: `#!/usr/bin/env node\n// agentops-conformance ${version}: one-file bundle (contract inside). Node >= 20. Built by npm run conformance:bundle.\nimport { createRequire as __agentopsCreateRequire } from 'node:module';\nconst require = __agentopsCreateRequire(import.meta.url);`,
  },
  legalComments: 'none',
  plugins: [embedContract],
  logLevel: 'warning',
})
const kb = (statSync(out).size / 1e3).toFixed(0)
console.log(`bundle: ${out} (${kb} kB, ${Math.round(performance.now() - started)} ms)`)
