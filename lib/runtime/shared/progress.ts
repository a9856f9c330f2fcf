/** `[Task N/M]`, the spec's progress notation. */
export const progressLabel = (index: number, total: number): string => `[Task ${index}/${total}]`;
