-- Fenced offset commit.
-- Prelude: fence (workers/lua/_fence.lua: `now`, `fence_check`)
-- KEYS[1]: the lock hash    (ls:{topic:queue}:lock:<group>)
-- KEYS[2]: the offset hash  (ls:{topic:queue}:offset:<group>)
-- ARGV[1]: consumer id
-- ARGV[2]: fencing token the consumer was granted
-- ARGV[3]: new committed offset (the next offset to consume)
-- ARGV[4]: completed offsets above it, encoded by the caller ('' when none)
-- Returns: {1, token} on success; {0, current_token} when the token or owner is stale;
--          {-1, current_token} when the caller's lock has expired on the broker side.
local token, refused = fence_check(KEYS[1], ARGV[1], ARGV[2])
if refused then return refused end
redis.call('HSET', KEYS[2], 'committed', ARGV[3], 'completed', ARGV[4],
  'token', token, 'updated_at', now)
return {1, token}
