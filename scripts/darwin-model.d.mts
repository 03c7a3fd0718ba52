/** The XNU model addon's path (build/darwin-model/runwarden.node). */
export const MODEL_ADDON: string;
/** Builds the XNU model addon unless it is newer than every input; returns its path. */
export function buildDarwinModel(options?: { quiet?: boolean }): string;
