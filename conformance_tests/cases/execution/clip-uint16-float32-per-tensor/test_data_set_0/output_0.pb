ByJ0Q<Q<Q<Q<Q<Q<Q<Q<
/Q<Q<Q<Q<Q<Q<Q<ëQ<ëëQ<Q<Q<Q<