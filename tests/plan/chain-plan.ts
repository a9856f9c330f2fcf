/** A JSON plan of `n` echo steps in one dependency chain; `cycle` closes it back onto the first step. */
export function chainPlanJson(n: number, cycle: boolean): string {
  const steps: string[] = [];
  for (let i = 0; i < n; i++) {
    const dep = i === 0 ? (cycle ? `"s${n - 1}"` : '') : `"s${i - 1}"`;
    steps.push(`{"id":"s${i}","description":"d","tool":"echo","dependsOn":[${dep}]}`);
  }
  return `{"id":"big","objective":"o","steps":[${steps.join(',')}]}`;
}
