// A sandboxed processor (bullmq runs this file in a child process). A RetryAfterError thrown here reaches the
// worker as bullmq's child serialises it: a plain Error carrying its own fields (name, retryAfterMs). Thrown
// as that plain Error here, since the child cannot load the TypeScript sources; after bullmq's round trip the
// two are alike.
module.exports = async (job) => {
  if (job.data.turnedAway && job.attemptsStarted === 1) {
    const error = new Error('retry after 400 ms');
    error.name = 'RetryAfterError';
    error.retryAfterMs = 400;
    throw error;
  }
  return { startedAt: Date.now() };
};
