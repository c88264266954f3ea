-- First step of creating a topic: record its queue count, marked 'creating' until the
-- topic is listed in ls:topics (a second key, in another cluster slot) and then marked
-- 'ready' (workers/topics.py). A topic is visible to producers and consumers only once
-- ready; re-running the creation after a failure at any step finishes it.
-- KEYS[1]: the topic's hash (ls:topic:<name>), fields queues, created_at, state
-- ARGV[1]: queue count
-- ARGV[2]: creation time in ms (kept from the first attempt)
-- Returns: {queues, state} of the topic as stored after the call: the existing queue
--          count when the topic was already there (state 'ready' for a topic created
--          before states existed), else ARGV[1] with state 'creating'.
local queues = redis.call('HGET', KEYS[1], 'queues')
if queues then
  return {tonumber(queues), redis.call('HGET', KEYS[1], 'state') or 'ready'}
end
redis.call('HSET', KEYS[1], 'queues', ARGV[1], 'created_at', ARGV[2], 'state', 'creating')
return {tonumber(ARGV[1]), 'creating'}
