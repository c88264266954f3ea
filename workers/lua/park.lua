-- Fenced parking of messages of a held key, with the offset commit that records them
-- as done for the queue (they are now kept, in order, in the key's parked set).
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
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner = redis.call('HGET', KEYS[1], 'owner')
local token = tonumber(redis.call('HGET', KEYS[1], 'token') or '0')
if owner ~= ARGV[1] or token ~= tonumber(ARGV[2]) then
  return {0, token}
end
if tonumber(redis.call('HGET', KEYS[1], 'expires_at') or '0') <= now then
  return {-1, token}
end
for i = 5, #ARGV - 1, 2 do
  redis.call('ZADD', KEYS[3], tonumber(ARGV[i]), ARGV[i + 1])
end
redis.call('HSET', KEYS[2], 'committed', ARGV[3], 'completed', ARGV[4],
  'token', token, 'updated_at', now)
return {1, token}
