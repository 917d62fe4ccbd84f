package demo

import "github.com/ticketing/ticketing/catalog"

// kind of venue decides its plan and the categories of its events.
type kind int

const (
	kindTheatre kind = iota
	kindArena
	kindClub
)

type venueSpec struct {
	name, address, city, country string
	lat, lon                     float64
	kind                         kind
	currency                     string
	// base is the cheapest price in minor units.
	base     int64
	english  bool
	sections []catalog.SectionInput
}

// venues: real places with their real coordinates; plans are invented and
// kept moderate so that seeding stays fast.
var venues = []venueSpec{
	{"Teatro Real", "Plaza de Isabel II, s/n", "Madrid", "España", 40.4184, -3.7110, kindTheatre, "EUR", 2500, false, theatre(14, 18, 6)},
	{"WiZink Center", "Av. Felipe II, s/n", "Madrid", "España", 40.4240, -3.6717, kindArena, "EUR", 3500, false, arena(1500, 10, 26, 10, 32)},
	{"Palau de la Música Catalana", "C/ Palau de la Música, 4-6", "Barcelona", "España", 41.3875, 2.1753, kindTheatre, "EUR", 2800, false, theatre(12, 16, 4)},
	{"Sala Apolo", "C/ Nou de la Rambla, 113", "Barcelona", "España", 41.3744, 2.1696, kindClub, "EUR", 1800, false, club(800, 6, 30)},
	{"Teatro de la Maestranza", "Paseo de Cristóbal Colón, 22", "Sevilla", "España", 37.3843, -5.9975, kindTheatre, "EUR", 2200, false, theatre(12, 18, 5)},
	{"Palau de les Arts Reina Sofía", "Av. del Professor López Piñero, 1", "Valencia", "España", 39.4583, -0.3553, kindTheatre, "EUR", 3000, false, theatre(16, 20, 6)},
	{"Bilbao Arena", "Askatasuna Etorbidea, 13", "Bilbao", "España", 43.2505, -2.9271, kindArena, "EUR", 2000, false, arena(900, 8, 24, 8, 26)},
	{"Auditorio Nacional", "Paseo de la Reforma 50, Polanco", "Ciudad de México", "México", 19.4247, -99.1950, kindArena, "MXN", 45000, false, arena(1200, 12, 28, 12, 34)},
	{"Palacio de Bellas Artes", "Av. Juárez s/n, Centro Histórico", "Ciudad de México", "México", 19.4352, -99.1412, kindTheatre, "MXN", 30000, false, theatre(12, 16, 4)},
	{"Teatro Colón", "Cerrito 628", "Buenos Aires", "Argentina", -34.6011, -58.3834, kindTheatre, "ARS", 2500000, false, theatre(16, 18, 6)},
	{"Movistar Arena Buenos Aires", "Humboldt 450, Villa Crespo", "Buenos Aires", "Argentina", -34.5937, -58.4476, kindArena, "ARS", 3500000, false, arena(1500, 10, 26, 10, 32)},
	{"Movistar Arena Bogotá", "Diagonal 61c #26-36", "Bogotá", "Colombia", 4.6494, -74.0772, kindArena, "COP", 12000000, false, arena(1200, 10, 24, 10, 30)},
	{"Teatro Municipal de Santiago", "Agustinas 794", "Santiago", "Chile", -33.4397, -70.6485, kindTheatre, "CLP", 25000, false, theatre(12, 16, 4)},
	{"Gran Teatro Nacional", "Av. Javier Prado Este 2225, San Borja", "Lima", "Perú", -12.0871, -77.0031, kindTheatre, "PEN", 8000, false, theatre(14, 18, 5)},
	{"Royal Albert Hall", "Kensington Gore", "London", "United Kingdom", 51.5009, -0.1774, kindTheatre, "GBP", 3500, true, theatre(16, 20, 6)},
	{"O2 Academy Brixton", "211 Stockwell Rd", "London", "United Kingdom", 51.4652, -0.1150, kindClub, "GBP", 3000, true, club(1500, 8, 36)},
	{"Beacon Theatre", "2124 Broadway", "New York", "United States", 40.7805, -73.9812, kindTheatre, "USD", 5500, true, theatre(14, 20, 6)},
	{"Brooklyn Steel", "319 Frost St", "New York", "United States", 40.7193, -73.9383, kindClub, "USD", 4000, true, club(1200, 5, 30)},
}

type artistSpec struct {
	name, bio string
	genres    []string
}

// artists are invented.
var artists = []artistSpec{
	{"Lucía Ferrán", "Cantautora madrileña de voz íntima y letras que miran al barrio.", []string{"pop", "cantautor"}},
	{"Los Ángeles del Sur", "Rumba y flamenco fusión desde Triana.", []string{"flamenco", "rumba"}},
	{"Íñigo Zubiría", "Pianista bilbaíno entre el jazz y la música clásica.", []string{"jazz", "clásica"}},
	{"Sofía Peñalver", "Soprano. Premio Lírico Nacional, habitual del repertorio verdiano.", []string{"ópera", "clásica"}},
	{"Mateo Galán", "Guitarrista y compositor de folk atlántico.", []string{"folk"}},
	{"Orquesta Sinfónica del Ebro", "Una orquesta joven con un repertorio que va de Falla a Björk.", []string{"clásica", "sinfónica"}},
	{"Nerea Olazábal", "Monologuista vasca: humor seco y cotidiano.", []string{"comedia", "stand-up"}},
	{"Dúo Camaleón", "Electropop en español con sintetizadores analógicos.", []string{"electrónica", "pop"}},
	{"Ramón Acuña y su Combo", "Salsa brava desde Cali para bailar toda la noche.", []string{"salsa", "tropical"}},
	{"Valentina Ríos", "Bolero y canción ranchera con una voz que llena teatros.", []string{"bolero", "ranchera"}},
	{"Tomás Echeverría Trío", "Tango contemporáneo de Buenos Aires.", []string{"tango"}},
	{"La Pequeña Compañía", "Teatro familiar con títeres y música en directo.", []string{"familiar", "teatro"}},
	{"Joaquín Méndez", "Cómico chileno: el absurdo de la vida en la ciudad.", []string{"comedia"}},
	{"Cumbia Celeste", "Cumbia psicodélica peruana con guitarras de los setenta.", []string{"cumbia", "psicodelia"}},
	{"Ana Belén Cortés", "Bailaora y coreógrafa de flamenco contemporáneo.", []string{"flamenco", "danza"}},
	{"Los Hermanos Quiñones", "Rock de carretera con raíces mexicanas.", []string{"rock"}},
	{"Marta Solà", "Violonchelista catalana, Bach y estrenos de hoy.", []string{"clásica"}},
	{"Bruma Norte", "Indie rock gallego de guitarras y niebla.", []string{"indie", "rock"}},
	{"DJ Añil", "Sesiones de house latino hasta el amanecer.", []string{"electrónica", "house"}},
	{"Coro Voces de Sevilla", "Coro de cámara con repertorio sacro y popular andaluz.", []string{"coral", "clásica"}},
	{"Héctor Villalobos", "Reguetón y trap con letras de barrio.", []string{"urbano", "reguetón"}},
	{"Isabel Mañé", "Jazz vocal con standards en castellano.", []string{"jazz"}},
	{"Compañía Teatro del Olivo", "Clásicos del Siglo de Oro con puesta en escena actual.", []string{"teatro"}},
	{"Los Guacharacos", "Vallenato moderno de la costa caribe colombiana.", []string{"vallenato"}},
	{"Emilia Fernández-Ruiz", "Pianista sevillana especializada en Albéniz y Granados.", []string{"clásica", "piano"}},
	{"Río Bravo Banda", "Banda sinaloense de metales y percusión.", []string{"banda", "regional mexicano"}},
	{"Ciclón", "Punk rock argentino de estadio.", []string{"punk", "rock"}},
	{"Amaia Etxeberria", "Folk vasco con txalaparta y electrónica.", []string{"folk", "electrónica"}},
	{"Noelia Cañizares", "Stand-up sobre maternidad, oficinas y grupos de WhatsApp.", []string{"comedia", "stand-up"}},
	{"Kiko Salazar", "Cantautor canario de ritmos isleños.", []string{"cantautor", "pop"}},
	{"The Willow Lanes", "London folk-rock quintet with three-part harmonies.", []string{"folk", "rock"}},
	{"Harriet Osei", "Soul singer from Peckham; gospel roots, modern production.", []string{"soul", "r&b"}},
	{"Brooklyn Brass Collective", "A twelve-piece brass band playing funk and Afrobeat.", []string{"funk", "afrobeat"}},
	{"Miles Okafor", "Stand-up comedian on family, food and the subway.", []string{"comedy", "stand-up"}},
	{"Clara Nightingale", "Indie pop with a chamber string section.", []string{"indie", "pop"}},
	{"The Gentle Giants", "Alt-rock veterans on their reunion tour.", []string{"rock", "alternative"}},
	{"Zoë Marchetti", "Electronic producer and live-looping violinist.", []string{"electronic", "classical crossover"}},
	{"Renée Dubois Quartet", "Modern jazz from Montréal with a French-Caribbean twist.", []string{"jazz"}},
	{"Citlali Xochitl", "Canción indígena contemporánea en náhuatl y español.", []string{"folk", "world"}},
	{"Gonçalo Araújo", "Fado de Lisboa con guitarra portuguesa.", []string{"fado"}},
}

// Event names and descriptions per category, in Spanish and English.
type titles struct{ names, descriptions []string }

var spanish = map[string]titles{
	"concierto": {
		[]string{"Música en el Retiro", "Noches de Verano", "Gira Corazón Abierto", "Acústico íntimo", "Canciones de ida y vuelta", "Sesión Única", "Gira Aniversario", "El Último Baile"},
		[]string{"Un concierto para cantar de principio a fin, con invitados sorpresa.", "Repertorio nuevo y los clásicos de siempre, con banda completa.", "Una noche íntima de canciones y conversación."},
	},
	"teatro": {
		[]string{"La vida es sueño", "Bodas de sangre", "El lazarillo de Tormes", "Luces de bohemia", "La casa de Bernarda Alba", "Don Juan Tenorio", "Fuenteovejuna"},
		[]string{"Nueva producción con un elenco de primera y escenografía contemporánea.", "Un clásico del teatro en español, adaptado para el público de hoy."},
	},
	"comedia": {
		[]string{"Risas en el Teatro", "Esto no es un monólogo", "Humor a la Carta", "La risa más larga", "¡Qué vergüenza!"},
		[]string{"Una hora y media de monólogos sin filtros.", "Humor para todos los públicos, o casi."},
	},
	"deportes": {
		[]string{"Liga de Baloncesto: Clásico", "Gala de Boxeo", "Final de Pádel Pro", "Copa de Voleibol", "Noche de Lucha Libre"},
		[]string{"El partido de la temporada, en directo.", "Deporte de élite con la mejor afición."},
	},
	"festival": {
		[]string{"Festival Sonidos del Sur", "Fiesta de la Música Latina", "Festival Noche Electrónica", "Encuentro de Folk Iberoamericano"},
		[]string{"Varios artistas, un solo escenario y toda la noche por delante.", "El festival que reúne a las voces del momento."},
	},
	"familia": {
		[]string{"El Principito, musical", "Títeres de la Pequeña Compañía", "Cuentos con Música", "Circo de Invierno"},
		[]string{"Un espectáculo para disfrutar en familia, a partir de 4 años.", "Música, color y muchas sorpresas para los más pequeños."},
	},
}

var english = map[string]titles{
	"concierto": {
		[]string{"Live at the Hall", "An Evening of Songs", "The Homecoming Tour", "Unplugged Nights", "Summer Sessions"},
		[]string{"A full-band show with new songs and old favourites.", "An intimate night of songs and stories."},
	},
	"teatro": {
		[]string{"A Midsummer Night's Dream", "The Importance of Being Earnest", "Hamlet", "Death of a Salesman"},
		[]string{"A new production with a stellar cast.", "The classic, staged for today's audience."},
	},
	"comedia": {
		[]string{"Comedy Night Live", "Stand-Up Showcase", "Laugh Out Loud"},
		[]string{"Ninety minutes of stand-up from the best on the circuit.", "Fresh comedy, no filter."},
	},
	"festival": {
		[]string{"City Sounds Festival", "Late Night Electronic", "Folk & Roots Weekender"},
		[]string{"Many artists, one stage, all night long."},
	},
	"familia": {
		[]string{"The Little Prince: The Musical", "Winter Circus"},
		[]string{"A show for the whole family, ages 4 and up."},
	},
}

// categories each kind of venue hosts.
var categoriesOf = map[kind][]string{
	kindTheatre: {"concierto", "teatro", "comedia", "familia", "teatro", "concierto"},
	kindArena:   {"concierto", "deportes", "festival", "comedia", "concierto"},
	kindClub:    {"concierto", "comedia", "festival", "concierto"},
}

var refundPolicies = []string{
	"Sin devoluciones salvo cancelación del evento.",
	"Devolución íntegra hasta 7 días antes del evento.",
	"Refunds only if the event is cancelled or rescheduled.",
}
