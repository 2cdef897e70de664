import isSafeRegex from 'safe-regex2';
import { z } from 'zod';

const compiles = (pattern: string): boolean => {
  try {
    new RegExp(pattern);
    return true;
  } catch {
    return false;
  }
};

/**
 * A regular expression a tenant supplies (eval checks, failure rules): it must compile, and a
 * pattern that can backtrack catastrophically (nested or overlapping quantifiers, per safe-regex2)
 * is refused at the edge rather than run against user data.
 */
export const safeRegexPattern = (maxChars: number) =>
  z
    .string()
    .min(1)
    .max(maxChars)
    .refine(compiles, { message: 'is not a valid regular expression' })
    .refine((p) => !compiles(p) || isSafeRegex(p), { message: 'may backtrack catastrophically (nested or overlapping quantifiers); refused' });
