"""What the next request is given (SPEC §6; §9 and §10 next): the budget,
which summary a segment may use (``selection``), packing, the account's
shared omitted prefix (``omitted``), the two formats (blocks, OpenAI
framing), the reads (``reader``), the projection itself and its metrics."""
