import type { Migration } from './index.js'

// Placeholder: the owning feature replaces this with its tables.
export const migration: Migration = { id: '003_limits', sql: 'SELECT 1;' }
