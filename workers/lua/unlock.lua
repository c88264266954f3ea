-- Release a queue lock, only by its current owner with its current fencing token.
-- KEYS[1]: the lock hash (ls:{topic:queue}:lock:<group>)
-- ARGV[1]: consumer id
-- ARGV[2]: fencing token
-- Returns: 1 when released, 0 when the caller no longer held it (nothing changed).
-- The token field is kept so the next grant gets a larger token.
local owner = redis.call('HGET', KEYS[1], 'owner')
local token = redis.call('HGET', KEYS[1], 'token')
if owner ~= ARGV[1] or token ~= ARGV[2] then
  return 0
end
redis.call('HSET', KEYS[1], 'owner', '', 'expires_at', 0)
return 1
