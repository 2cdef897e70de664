/** A member's or key creator's name as the admin pages show it: first and last name, else the email, else `fallback`. */
export const personName = (p: { email: string | null; first_name: string | null; last_name: string | null }, fallback: string): string =>
  [p.first_name, p.last_name].filter(Boolean).join(' ') || p.email || fallback;
