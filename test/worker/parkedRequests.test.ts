import { ParkedRequests } from '../../src/worker/slots/parkedRequests';
import { PendingRequest } from '../../src/redis/requestBatcher';

function pending(request: number, answers: Map<number, string>): PendingRequest<number, string> {
  return { request, resolve: (reply) => answers.set(request, reply), reject: (error) => answers.set(request, error.message) };
}

describe('ParkedRequests', () => {
  it('sends every parked request back together at the earliest moment asked for', async () => {
    const served: number[][] = [];
    const parked = new ParkedRequests<number, string>((requests) => served.push(requests.map((p) => p.request)));
    const answers = new Map<number, string>();
    parked.park(pending(1, answers), 200);
    parked.park(pending(2, answers), 20);
    parked.park(pending(3, answers), 0.2);
    expect(parked.count((n) => n > 1)).toBe(2);
    await new Promise((resolve) => setImmediate(resolve));
    // Under a ms: the next turn of the event loop, for all three.
    expect(served).toEqual([[1, 2, 3]]);
    expect(parked.size).toBe(0);
    parked.park(pending(4, answers), 30);
    expect(served).toHaveLength(1);
    while (served.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(served).toEqual([[1, 2, 3], [4]]);
    expect(answers.size).toBe(0);
  });

  it('wake() sends them back at once, release() answers them instead', () => {
    const served: number[][] = [];
    const parked = new ParkedRequests<number, string>((requests) => served.push(requests.map((p) => p.request)));
    const answers = new Map<number, string>();
    parked.park(pending(1, answers), 10_000);
    parked.wake();
    expect(served).toEqual([[1]]);
    parked.park(pending(2, answers), 10_000);
    parked.release('none');
    expect(answers.get(2)).toBe('none');
    expect(parked.size).toBe(0);
    expect(served).toEqual([[1]]);
  });
});
