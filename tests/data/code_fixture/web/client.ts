export interface Options {
  timeoutMs: number;
}

export const DEFAULT_TIMEOUT = 5000;

export class ApiClient {
  constructor(private base: string) {}

  fetchUser(id: string): Promise<string> {
    return request(this.base + "/users/" + id);
  }
}

function request(url: string): Promise<string> {
  return Promise.resolve(url);
}

export const makeClient = (base: string) => new ApiClient(base);
