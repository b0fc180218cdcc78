import type { Migration } from './index.js'

// Placeholder: the owning feature replaces this with its tables.
export const migration: Migration = { id: '001_core', sql: 'SELECT 1;' }
