import { Ajv2020 } from 'ajv/dist/2020.js'
import { describe, expect, it, vi } from 'vitest'
import { CompiledSchemas } from '../../src/domain/tools/compiled-schemas.js'
import { checkToolDefinition } from '../../src/domain/tools/providers.js'

describe('compiled tool schemas', () => {
  const counting = () => {
    const ajv = new Ajv2020({ strict: false })
    const compiled: unknown[] = []
    const compile = (schema: Record<string, unknown>) => {
      compiled.push(schema)
      return ajv.compile(schema)
    }
    return { compiled, compile }
  }

  it('compiles a schema once for every record that carries it (a record is read anew for each call)', () => {
    const { compiled, compile } = counting()
    const cache = new CompiledSchemas(compile)
    const schema = { type: 'object', required: ['ok'] }
    const first = cache.validatorFor(structuredClone(schema))
    const second = cache.validatorFor(structuredClone(schema))
    expect(second).toBe(first)
    expect(compiled).toHaveLength(1)
    expect(first({ ok: 1 })).toBe(true)
    expect(first({})).toBe(false)
  })

  it('keeps different schemas apart', () => {
    const { compile } = counting()
    const cache = new CompiledSchemas(compile)
    const needsA = cache.validatorFor({ type: 'object', required: ['a'] })
    const needsB = cache.validatorFor({ type: 'object', required: ['b'] })
    expect(needsA({ a: 1 })).toBe(true)
    expect(needsB({ a: 1 })).toBe(false)
  })

  it('holds at most its bound, dropping the least recently used schema', () => {
    const { compiled, compile } = counting()
    const cache = new CompiledSchemas(compile, 2)
    const a = { const: 'a' }
    const b = { const: 'b' }
    cache.validatorFor(a)
    cache.validatorFor(b)
    cache.validatorFor(a) // a is now the most recently used
    cache.validatorFor({ const: 'c' }) // b goes
    expect(cache.size).toBe(2)
    expect(compiled).toHaveLength(3)
    cache.validatorFor(a)
    expect(compiled).toHaveLength(3)
    cache.validatorFor(b)
    expect(compiled).toHaveLength(4)
  })
})

describe("a tool registration's schema check", () => {
  it('compiles a schema once however many registrations carry it, and still refuses a bad one every time', () => {
    const compile = vi.spyOn(Ajv2020.prototype, 'compile')
    try {
      const schema = { type: 'object', properties: { registration_check_once: { type: 'string' } } }
      for (let i = 0; i < 3; i++)
        checkToolDefinition('builtin:echo', {}, { input_schema: structuredClone(schema), output_schema: {} })
      const compiledIt = compile.mock.calls.filter(([s]) => JSON.stringify(s) === JSON.stringify(schema))
      expect(compiledIt).toHaveLength(1)
      for (let i = 0; i < 2; i++)
        expect(() =>
          checkToolDefinition(
            'builtin:echo',
            {},
            { input_schema: { type: 'no-such-type' }, output_schema: {} },
          ),
        ).toThrow(/input_schema is not a valid JSON Schema/)
    } finally {
      compile.mockRestore()
    }
  })
})

describe('a schema whose references loop', () => {
  it('is refused naming the loop, not the stack', () => {
    const looping = { $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/a' } } }
    expect(() =>
      checkToolDefinition('builtin:echo', {}, { input_schema: looping, output_schema: {} }),
    ).toThrow('input_schema is not a valid JSON Schema: its references lead back to themselves')
  })
})
