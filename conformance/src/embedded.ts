/**
 * The contract's YAML when the suite runs as the one-file bundle (`npm run conformance:bundle` replaces this module
 * with the text); undefined when it runs from the sources or the package, which read the file.
 */
export const EMBEDDED_CONTRACT: string | undefined = undefined

/** The suite's version inside the one-file bundle (which has no package.json beside it). */
export const EMBEDDED_VERSION: string | undefined = undefined
