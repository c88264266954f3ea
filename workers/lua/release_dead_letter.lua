-- Replay or discard one dead letter (operator action). Idempotent: a dead letter that is
-- no longer in the stream changes nothing.
-- Replay keeps the key's order (docs/semantics.md, "Replay and discard"):
-- - in place, when the dead letter is the one holding its key (after_dlq = hold): into
--   the key's parked set at its original offset, ahead of everything parked behind it;
--   the owning consumer drains the set in offset order before the key moves on;
-- - otherwise (queue ordering, continue, or a key no longer held by it) re-published at
--   the end of its queue, with headers that link it to the dead letter.
-- Discard drops it; a key it holds is released and its parked messages run in order.
-- A released key is only marked 'releasing', even with nothing parked: its consumer may be
-- parking messages of the key at this moment (the dead letter and the parking of the
-- key's rest are two steps), and freeing the key here would strand them in a parked set
-- nobody drains. The consumer frees it (unpark.lua) once the parked set is empty.
-- Prelude: produce (workers/lua/_produce.lua: `append_message`)
-- KEYS[1]: the dead-letter stream (ls:{topic:queue}:dlq:<group>)
-- KEYS[2]: the parked-keys hash   (ls:{topic:queue}:parked:<group>)
-- KEYS[3]: the key's parked set   (ls:{topic:queue}:parked:<group>:<key>)
-- KEYS[4]: the queue's stream     (ls:{topic:queue}:log)
-- KEYS[5]: the queue's sequence   (ls:{topic:queue}:seq)
-- KEYS[6]: the queue's wake flag  (ls:{topic:queue}:wake)
-- ARGV[1]: dead-letter entry id
-- ARGV[2]: 'replay' or 'discard'
-- ARGV[3]: sharding key of the dead letter
-- ARGV[4]: its original offset
-- ARGV[5]: replay: the serialised message for the parked set (in place)
-- ARGV[6]: replay: the headers (JSON) of the re-published message
-- ARGV[7]: replay: approximate max length of the queue's stream (0 = unbounded)
-- Returns: 0 when the dead letter was not found (already handled); discard: 1;
--          replay: {1, -1} when replayed in place, {2, offset} when re-published.
local entry = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if #entry == 0 then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local raw = redis.call('HGET', KEYS[2], ARGV[3])
local hold = nil
if raw then hold = cjson.decode(raw) end

if ARGV[2] == 'replay' and not (hold and hold.dlq_id == ARGV[1]) then
  local fields = entry[1][2]
  local body = ''
  for i = 1, #fields - 1, 2 do
    if fields[i] == 'body' then body = fields[i + 1] end
  end
  -- Append first: a script's writes before an error stay, so a refused append must find
  -- the dead letter still there.
  local offset = append_message(KEYS[4], KEYS[5], KEYS[6], ARGV[3], body, ARGV[6], ARGV[7])
  redis.call('XDEL', KEYS[1], ARGV[1])
  return {2, offset}
end

redis.call('XDEL', KEYS[1], ARGV[1])
if ARGV[2] == 'replay' then
  redis.call('ZADD', KEYS[3], tonumber(ARGV[4]), ARGV[5])
end
if hold then
  hold.state = 'releasing'
  hold.since = now
  redis.call('HSET', KEYS[2], ARGV[3], cjson.encode(hold))
end
if ARGV[2] == 'replay' then
  return {1, -1}
end
return 1
