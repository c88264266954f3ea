-- Fenced parking of messages of a held key, with the offset commit that records them
-- as done for the queue (they are now kept, in order, in the key's parked set).
-- Prelude: fence (workers/lua/_fence.lua: `now`, `fence_check`)
-- KEYS[1]: the lock hash         (ls:{topic:queue}:lock:<group>)
-- KEYS[2]: the offset hash       (ls:{topic:queue}:offset:<group>)
-- KEYS[3]: the key's parked set  (ls:{topic:queue}:parked:<group>:<key>), score = offset
-- ARGV[1]: consumer id
-- ARGV[2]: fencing token
-- ARGV[3]: new committed offset
-- ARGV[4]: completed offsets above it ('' when none)
-- ARGV[5..]: pairs of (offset, serialised message)
-- Returns: {1, token} on success (parking the same message twice is a no-op),
--          {0, token} when fenced out, {-1, token} when the lock expired.
local token, refused = fence_check(KEYS[1], ARGV[1], ARGV[2])
if refused then return refused end
for i = 5, #ARGV - 1, 2 do
  redis.call('ZADD', KEYS[3], tonumber(ARGV[i]), ARGV[i + 1])
end
redis.call('HSET', KEYS[2], 'committed', ARGV[3], 'completed', ARGV[4],
  'token', token, 'updated_at', now)
return {1, token}
