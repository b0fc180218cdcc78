/** Types of server-stores.mjs (a plain ESM module of the mutation command). */
export declare function serverStoresDir(memory?: string): string | undefined
export declare function removeLeftBehind(memory: string): void
