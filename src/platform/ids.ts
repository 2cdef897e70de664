import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';

/** Server-generated ids are UUIDv7: time-ordered, so keyset pagination by id follows creation. */
export const newId = (): string => uuidv7();

/**
 * Client-supplied ids need only be UUID-shaped: an OpenTelemetry trace id written as a UUID fails
 * strict RFC version/variant checks most of the time, and we must accept it.
 */
export const uuidShaped = () => z.guid().transform((s) => s.toLowerCase());
