/**
 * How a lease was got: `claimed` when the row was free or already ours (a renewal), `taken-over` when another
 * owner held it and let it lapse (a replica that died or stalled).
 */
export type LeaseClaim = 'claimed' | 'taken-over'
