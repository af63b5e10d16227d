import { Injectable } from '@nestjs/common';

// Stands in for the payments provider's client: it notes the moment each call arrives, which is what the
// provider's own rate limit would count, so that main.ts can check the throttles from the API's side.
@Injectable()
export class PaymentsApi {
  readonly calls: { at: number; customer: string }[] = [];

  async charge(customer: string, cents: number): Promise<string> {
    this.calls.push({ at: Date.now(), customer });
    await new Promise((resolve) => setTimeout(resolve, 50)); // the HTTP round trip
    return `ch_${customer}_${cents}_${this.calls.length}`;
  }
}
