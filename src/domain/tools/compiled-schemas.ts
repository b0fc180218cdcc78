import type { ValidateFunction } from 'ajv/dist/2020.js'

/**
 * Validators kept by their schema's JSON text, so a schema is compiled once for every record that carries it: a
 * tool's record is read anew for each call, and a cache keyed by the object would compile its `output_schema` again
 * on every call. Bounded: past `max` schemas the least recently used goes first.
 */
export class CompiledSchemas {
  private readonly byText = new Map<string, ValidateFunction>()

  constructor(
    private readonly compile: (schema: Record<string, unknown>) => ValidateFunction,
    private readonly max = 1_000,
  ) {}

  validatorFor(schema: Record<string, unknown>): ValidateFunction {
    const text = JSON.stringify(schema)
    const known = this.byText.get(text)
    if (known) {
      // Most recently used last: Map iterates in insertion order.
      this.byText.delete(text)
      this.byText.set(text, known)
      return known
    }
    const validate = this.compile(schema)
    if (this.byText.size >= this.max) {
      const oldest = this.byText.keys().next()
      if (!oldest.done) this.byText.delete(oldest.value)
    }
    this.byText.set(text, validate)
    return validate
  }

  get size(): number {
    return this.byText.size
  }
}
