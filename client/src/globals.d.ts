// The generated fetch client names DOM's `BodyInit`; under Node's own types (no DOM lib) it comes from undici.
type BodyInit = import('undici-types').BodyInit
