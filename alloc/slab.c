/*
 * slab.c - size classes and their shared pools of free slots.
 *
 * 41 classes from 64 B to 64 KiB, four per doubling (64, 80, 96, 112, 128,
 * 160, ...), so a request never wastes more than a fifth of its slot. A
 * slab is one page run of at least 64 KiB (eight slots for the largest
 * classes) carved from the extent allocator; its free slots are bits in a
 * bitmap kept outside the region, one bit per 64-byte window, set for the
 * windows where a free slot starts. Threads do not come here for every
 * lease: their caches (tcache.c) take and give back slots in batches, under
 * the class lock, each cache from slabs of its own as far as the region
 * allows (slab_pick()). A class keeps its empty slabs until some request finds
 * the region full: then slab_reclaim_empty() gives them back to the extent
 * allocator, where they coalesce and serve large leases or other classes.
 * Keeping them means a slot released twice still finds its slab and gets
 * -EALREADY, and a class that breathes in and out does not carve anew.
 */
#include "alloc_internal.h"

#define SLAB_MIN_SLOTS 8
#define MAG_BYTES (256u << 10)  /* bytes a thread may cache per class */
#define SLAB_SCAN 16            /* slabs a refill looks at for its own */

void slab_init_classes(struct alloc *a)
{
	unsigned i, k;

	/* Requests of 16 (k - 1) + 1 .. 16 k bytes share a class: class sizes
	 * are multiples of 16. */
	for (k = 0; k < sizeof(a->lut); k++)
		a->lut[k] = (uint8_t)size_to_class(16 * (k + 1));
	for (i = 0; i < ALLOC_NCLASSES; i++) {
		struct size_class *c = &a->cls[i];
		uint32_t bytes, cap;

		c->size = (uint32_t)class_size(i);
		bytes = c->size * SLAB_MIN_SLOTS;
		c->npages = (bytes + ALLOC_PAGE_SIZE - 1) / ALLOC_PAGE_SIZE;
		if (c->npages < ALLOC_SLAB_MIN_PAGES)
			c->npages = ALLOC_SLAB_MIN_PAGES;
		c->nslots = (c->npages * ALLOC_PAGE_SIZE) / c->size;
		cap = MAG_BYTES / c->size;
		c->mag_cap = cap < 4 ? 4 : cap > ALLOC_MAG_MAX ? ALLOC_MAG_MAX : cap;
		c->magic = ((uint64_t)1 << 40) / c->size + 1;
		a->ci[i] = (struct class_info){ c->size, c->nslots, c->mag_cap,
						c->magic };
		c->partial = ALLOC_NIL;
		pthread_mutex_init(&c->lock, NULL);
		/* A slab's state indices must fit in its pages' share. */
		assert(c->nslots <= c->npages * 64);
	}
}

static void list_add(struct alloc *a, struct size_class *c, uint32_t id)
{
	struct slab *s = &a->slabs[id];

	s->prev = ALLOC_NIL;
	s->next = c->partial;
	if (c->partial != ALLOC_NIL)
		a->slabs[c->partial].prev = id;
	c->partial = id;
	s->on_list = 1;
}

static void list_del(struct alloc *a, struct size_class *c, uint32_t id)
{
	struct slab *s = &a->slabs[id];

	if (s->prev != ALLOC_NIL)
		a->slabs[s->prev].next = s->next;
	else
		c->partial = s->next;
	if (s->next != ALLOC_NIL)
		a->slabs[s->next].prev = s->prev;
	s->on_list = 0;
}

/* A new, empty slab for class cls, or ALLOC_NIL when the region is full.
 * Called with the class lock held (class lock before ext_lock). */
static uint32_t slab_carve(struct alloc *a, unsigned cls)
{
	struct size_class *c = &a->cls[cls];
	uint32_t first, id, i;

	pthread_mutex_lock(&a->ext_lock);
	first = ext_alloc(a, c->npages, 1);
	if (first != ALLOC_NIL)
		ext_mark(a, first, c->npages, RUN_SLAB, (uint8_t)cls);
	pthread_mutex_unlock(&a->ext_lock);
	if (first == ALLOC_NIL)
		return ALLOC_NIL;
	id = first / ALLOC_SLAB_MIN_PAGES;
	a->slabs[id].first = first;
	a->slabs[id].nfree = c->nslots;
	/* Nobody's, whoever had the pages before. */
	atomic_store_explicit(&a->slabs[id].owner, 0, memory_order_relaxed);
	/* Old runs may have left bytes and tombstones in these windows. */
	memset((void *)&a->state[first * 64], 0, (size_t)c->npages * 64);
	memset(&a->freebits[first], 0, c->npages * sizeof(a->freebits[0]));
	for (i = 0; i < c->nslots; i++) {
		uint64_t off = ((uint64_t)first << ALLOC_PAGE_SHIFT) +
			       (uint64_t)i * c->size;
		uint32_t b = (uint32_t)(off >> 6) - first * 64;

		atomic_store_explicit(&a->state[off >> 6],
				      st_byte(off, ALLOC_FREE),
				      memory_order_relaxed);
		a->freebits[first + b / 64] |= (uint64_t)1 << (b % 64);
	}
	list_add(a, c, id);
	c->nslabs++;
	c->nempty++;
	return id;
}

/* Give an empty slab's pages back to the extent allocator. */
static void slab_return(struct alloc *a, struct size_class *c, uint32_t id)
{
	list_del(a, c, id);
	c->nslabs--;
	pthread_mutex_lock(&a->ext_lock);
	ext_free(a, a->slabs[id].first);
	pthread_mutex_unlock(&a->ext_lock);
}

/* Take free slots of slab id into out for the cache tagged `tag`: page
 * by page (a bitmap word, and the one cache line of state bytes of those
 * slots), every free slot of a page while that fits in max, until there
 * are want. A thread's slots then share no state line, and as far as the
 * class allows no data line, with another thread's, so two threads' hit
 * paths do not write one line. */
static unsigned slab_take(struct alloc *a, struct size_class *c, uint32_t id,
			  uint64_t tag, mag_ent *out, unsigned want,
			  unsigned max)
{
	struct slab *s = &a->slabs[id];
	uint32_t w;
	unsigned got = 0;

	atomic_store_explicit(&s->owner, tag, memory_order_relaxed);
	if (s->nfree == c->nslots)
		c->nempty--;
	for (w = 0; w < c->npages && got < want; w++) {
		uint64_t *word = &a->freebits[s->first + w];

		while (*word && got < max) {
			uint32_t sidx = (s->first + w) * 64 +
					(uint32_t)__builtin_ctzll(*word);
			unsigned char st = atomic_load_explicit(&a->state[sidx],
						memory_order_relaxed);

			*word &= *word - 1;
			assert((st & ~ST_POS) == ST_FREE);
			out[got++] = ent_make(a, (uint64_t)sidx * 64 + (st & ST_POS));
		}
	}
	s->nfree -= got;
	if (s->nfree == 0)
		list_del(a, c, id);
	return got;
}

/* The slab a refill by the cache tagged `tag` takes slots from: of the
 * first SLAB_SCAN slabs with free slots, the first that is that cache's,
 * else the first that is nobody's or wholly free; else a new slab; else,
 * when the region has no room for one, any slab with free slots;
 * ALLOC_NIL when none has.
 *
 * So threads leasing one class at once each take from slabs of their own
 * (a slab spans at least 16 pages, so 16 lines of state bytes). Taking
 * pages of one slab in turn, two threads' state lines bordered each other,
 * and the prefetch of the line next to one written made each thread's
 * hit paths about 1.7 times slower (bench/alloc, 128-320 B, 2 threads).
 * The cost: a class may hold one partly used slab per thread that leases
 * it. */
static uint32_t slab_pick(struct alloc *a, unsigned cls, uint64_t tag)
{
	struct size_class *c = &a->cls[cls];
	uint32_t id = c->partial, spare = ALLOC_NIL, n;

	for (n = 0; id != ALLOC_NIL && n < SLAB_SCAN; n++) {
		const struct slab *s = &a->slabs[id];
		uint64_t o = atomic_load_explicit(&s->owner,
						  memory_order_relaxed);

		if (o == tag)
			return id;
		if (spare == ALLOC_NIL && (o == 0 || s->nfree == c->nslots))
			spare = id;
		id = s->next;
	}
	if (spare != ALLOC_NIL)
		return spare;
	id = slab_carve(a, cls);
	return id != ALLOC_NIL ? id : c->partial;
}

/* Clear the mark of the cache tagged `tag` on slab id, if it is still
 * there: someone may have taken slots since and marked it theirs. */
static void slab_unmark(struct alloc *a, uint32_t id, uint64_t tag)
{
	struct slab *s = &a->slabs[id];
	uint64_t o = tag;

	/* A load first: most slabs a cache gave up are no longer its. */
	if (atomic_load_explicit(&s->owner, memory_order_relaxed) == tag)
		atomic_compare_exchange_strong_explicit(&s->owner, &o, 0,
			memory_order_relaxed, memory_order_relaxed);
}

unsigned slab_refill(struct alloc *a, unsigned cls, uint64_t tag,
		     uint32_t *own, mag_ent *out, unsigned want, unsigned max)
{
	struct size_class *c = &a->cls[cls];
	unsigned got = 0;
	uint32_t id;

	pthread_mutex_lock(&c->lock);
	while (got < want) {
		id = slab_pick(a, cls, tag);
		if (id == ALLOC_NIL)
			break;
		/* The cache marks one slab of the class at most: the one it
		 * takes from now. The one before goes back to nobody. */
		if (id != *own) {
			if (*own != ALLOC_NIL)
				slab_unmark(a, *own, tag);
			*own = id;
		}
		got += slab_take(a, c, id, tag, out + got, want - got,
				 max - got);
	}
	c->out += got;
	if (c->out * c->size > c->high_water)
		c->high_water = c->out * c->size;
	pthread_mutex_unlock(&c->lock);
	return got;
}

/* The cache tagged `tag` is gone: the slabs it marked (own[], one per
 * class at most) are nobody's. Without the class locks: the owner is a
 * hint (slab_pick()), and a tag is never reused, so a compare-and-swap
 * clears exactly that cache's marks. */
void slab_disown(struct alloc *a, uint64_t tag, const uint32_t *own)
{
	unsigned i;

	for (i = 0; i < ALLOC_NCLASSES; i++)
		if (own[i] != ALLOC_NIL)
			slab_unmark(a, own[i], tag);
}

void slab_flush(struct alloc *a, unsigned cls, const mag_ent *ents,
		unsigned n)
{
	struct size_class *c = &a->cls[cls];
	unsigned i;

	if (n == 0)
		return;
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < n; i++) {
		uint64_t off = ent_off(a, ents[i]);
		uint32_t first = a->pages[off >> ALLOC_PAGE_SHIFT].first;
		uint32_t id = first / ALLOC_SLAB_MIN_PAGES;
		uint32_t idx = (uint32_t)(off >> 6) - first * 64;
		struct slab *s = &a->slabs[id];
		uint64_t bit = (uint64_t)1 << (idx % 64);

		assert(a->pages[first].kind == RUN_SLAB &&
		       a->pages[first].cls == cls);
		assert(!(a->freebits[first + idx / 64] & bit));
		a->freebits[first + idx / 64] |= bit;
		if (s->nfree++ == 0)
			list_add(a, c, id);
		if (s->nfree == c->nslots)
			c->nempty++;
	}
	c->out -= n;
	pthread_mutex_unlock(&c->lock);
	alloc_wake_waiters(a);
}

/* Return every completely free slab to the extent allocator, so that a
 * large lease or another class can use the pages. */
void slab_reclaim_empty(struct alloc *a)
{
	unsigned i;

	for (i = 0; i < ALLOC_NCLASSES; i++) {
		struct size_class *c = &a->cls[i];
		uint32_t id, next;

		pthread_mutex_lock(&c->lock);
		for (id = c->partial; id != ALLOC_NIL; id = next) {
			next = a->slabs[id].next;
			if (a->slabs[id].nfree == c->nslots) {
				slab_return(a, c, id);
				c->nempty--;
			}
		}
		pthread_mutex_unlock(&c->lock);
	}
}
