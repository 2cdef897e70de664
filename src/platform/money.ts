/**
 * USD amounts rounded to 12 significant digits: sums of per-token prices carry binary floating
 * point noise (0.1 + 0.2 = 0.30000000000000004) that no one should see in an invoice or a CSV.
 */
export const roundUsd = (amount: number): number => Number(amount.toPrecision(12));
