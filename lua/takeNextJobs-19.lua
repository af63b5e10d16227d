--[[
  Delivers the next jobs of a throttled queue: the first held jobs, in queue order, whose every bucket has
  room. Each delivery counts one token in every limit of every bucket it draws from and moves the job to
  active exactly as bullmq's moveToActive does (lock, `active` event, processedOn, ats). Jobs that cannot
  go stay held, untouched.

  Held jobs of classes with room wait in one queue-ordered set (ready-jobs), so a job that can go costs
  the same whatever is held elsewhere. The first job of a class that meets a full bucket moves into the
  class's own list, the class waits on that bucket, and later jobs of the class follow it there as they
  come up; none of them is looked at again until the bucket has room. So held backlogs cost nothing per
  delivery, and each held job is moved at most once per time its bucket fills.

  When the queue's throttles key only on job.data and the job name (and no worker computes attributes),
  jobs producers added are classified here too (includes/classifyInLua), taken from wait (then
  prioritized) when they come first in queue order: a job that can go goes straight to active, one that
  cannot is held as above. Otherwise, and for any job that needs it, the worker classifies them first
  (intakeJobs, classifyJobs).

  bullmq's own rate limit is one more limit, checked and counted as bullmq's moveToActive does: the
  queue's global rate limit (meta max/duration, queue.setGlobalRateLimit) or the worker's `limiter`
  option, a fixed window in the limiter key, also set by rateLimit(ms). While it has no room nothing is
  delivered and the reply says for how long (as bullmq's {0, 0, ttl, 0}); each delivery counts in it.

  A slot whose completion was refused (completeJobs adds its token to refused-tokens) gets no job, as
  bullmq fetches a next job only after a completion that succeeded.

  Input:
    KEYS[1]  wait          KEYS[6]  meta          KEYS[11] wakeups        (ZSET bucket id -> us)
    KEYS[2]  active        KEYS[7]  pc            KEYS[12] state          (HASH gen, held, ...)
    KEYS[3]  prioritized   KEYS[8]  marker        KEYS[13] classes        (SET)
    KEYS[4]  events        KEYS[9]  ready-jobs    KEYS[14] stale          (SET)
    KEYS[5]  delayed       KEYS[10] ready-classes KEYS[15] class-state    (HASH class -> bucket id)
                                                 KEYS[16] removed-held   (SET, see forgetRemovedJobs)
                                                 KEYS[17] put-back       (SET, see lua/markPutBack-2.lua)
                                                 KEYS[18] limiter        (bullmq's rate limiter STRING)
                                                 KEYS[19] refused-tokens (SET, see completeJobs)
    ARGV[1]  bullmq key prefix of the queue ("bull:orders:")
    ARGV[2]  lockDuration (ms)   ARGV[3] worker name ('' for none)
    ARGV[4]  queue base of our keys     ARGV[5] throttle key prefix
    ARGV[6]  most refusals and moves to spend     ARGV[7] leaseMs (h)
    ARGV[8]  the config generation the calling worker holds: it classifies new jobs here only when that is
             the queue's (a worker whose own declarations are not in the published config yet, or that
             read the registry after another, leaves them to be classified once they agree)
    ARGV[9]  the worker's limiter max ('' for none)    ARGV[10] its limiter duration (ms; '' for none)
    ARGV[11] the caller's clock (ms): used only to promote delayed jobs, as bullmq's moveToActive promotes
             them on its caller's clock (delays are set on the producer's); every throttle decision, and
             processedOn, read the Redis server's TIME
    ARGV[12] K, then K lock tokens: up to K jobs are delivered, each locked with the next token not refused
    ARGV[13+K] after a restart or promotion of this node: 'hold' the namespace's throttles for their longest
             window (they may have lost deliveries with it), or 'resume' after h (Redis keeps acknowledged
             writes); see includes/recoveryHold
    ARGV[14+K] when this call is too late to count a delivery (us, this node's clock, from the caller's last
             reply and the time since; 0: no limit): see includes/exactRoom
    ARGV[15+K] the namespace's node identity the worker saw recorded ('' for none): a node with no record
             where the worker saw one lost it, and holds as after a restart (includes/nodeIdentity)
    (test builds read one more trailing ARGV, a clock offset in ms)
    bullmq 5 only: the paused list (where promoted delayed jobs go while paused), composed from ARGV[1]

  Class and bucket keys are composed from ARGV[4] and ARGV[5] (includes/schedulerKeys), as bullmq
  composes job keys from ARGV[1]: in Redis Cluster, give the queue a hash-tagged prefix such as {bull}.

  Output:
    { nowUs, nextWakeUs, nextDelayedMs, unclassified, stale, dropped, gen, more, n, rateLimitMs, r,
      refused_1, ..., refused_r, id_1, job_1, ..., id_n, job_n }
    nextWakeUs: when a full bucket next has room (0: none); nextDelayedMs: the next delayed job (0: none; on
    the callers' clock, as bullmq keeps it);
    both are only worked out when fewer than K jobs went. unclassified: jobs in wait/prioritized that the
    worker must classify (0 while this script classifies them); more: 1 when the budget ran out with
    jobs still to look at (call again); stale: classes of an older config generation; dropped: held ids whose job had been
    removed; gen: the queue's config generation; rateLimitMs: how long bullmq's rate limit has no room
    (0: it has, or there is none); refused_i: the positions (1..K) of tokens whose completion was refused,
    which got no job; job_i: the job hash as HGETALL pairs, locked with the i-th token not refused.
    With leaseMs > 0, one more element: { ticket_1, ..., ticket_n }, what job_i was counted in, per bucket
    "<bucket id>$<cost>@<window ms>,..." joined by '|' ('' for none), after "<H ms>#" when a rate's lease H
    shortens the job's deadline, for a job that does not start in time to give back (lua/returnTokens-n.lua,
    src/worker/lateStarts/startDeadlines.ts).
]]
local rcall = redis.call

--- @include "includes/takeJobsInput"
--- @include "includes/exactRoom"
--- @include "includes/takeJobsBody"

local run = takeJobs(input)
-- With a start deadline (ARGV[7] > 0): after the jobs, what each was counted in (includes/exactRoom's roomTicketing).
if input.leaseMs > 0 then run.reply[run.REPLY_HEAD + 2 * run.delivered + 1] = roomTicketing.tickets end
return run.reply
